import Foundation
import Reservoir
import ReservoirLMDB
import ReservoirSQLite

/// The backends the tool knows, by scheme: every built-in one.
enum Backends {
    static let registry = BackendRegistry([.sqlite, .lmdb])

    /// A configuration per built-in backend, with files under `directory`.
    static func scratchConfigurations(in directory: URL) -> [String] {
        [
            "memory:",
            "sqlite:" + directory.appendingPathComponent("scratch.sqlite").path,
            "lmdb:" + directory.appendingPathComponent("scratch.lmdb").path,
        ]
    }
}
