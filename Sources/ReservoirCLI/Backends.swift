import Foundation
import Reservoir
import ReservoirSQLite

/// The backends the tool knows, by scheme: every built-in one.
enum Backends {
    static let registry = BackendRegistry([.sqlite])

    /// A configuration per built-in backend, with files under `directory`.
    static func scratchConfigurations(in directory: URL) -> [String] {
        ["memory:", "sqlite:" + directory.appendingPathComponent("scratch.sqlite").path]
    }
}
