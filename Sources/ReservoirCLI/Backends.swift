import Foundation
import Reservoir
import ReservoirLMDB
import ReservoirPostgres
import ReservoirSQLite

/// The backends the tool knows, by scheme: every built-in one.
enum Backends {
    static let registry = BackendRegistry([.sqlite, .lmdb, .postgres, .postgresql])

    /// A configuration per built-in file or memory backend, with files under `directory`
    /// (PostgreSQL needs a server, so `bench` takes it with --store).
    static func scratchConfigurations(in directory: URL) -> [String] {
        [
            "memory:",
            "sqlite:" + directory.appendingPathComponent("scratch.sqlite").path,
            "lmdb:" + directory.appendingPathComponent("scratch.lmdb").path,
        ]
    }
}
