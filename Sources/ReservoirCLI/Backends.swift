import Foundation
import Reservoir

/// The backends the tool knows, by scheme.
enum Backends {
    static let registry = BackendRegistry()

    /// A configuration per built-in backend, with files under `directory`.
    static func scratchConfigurations(in directory: URL) -> [String] {
        ["memory:"]
    }
}
