import Foundation
import Reservoir

/// A backend taking part in a differential run.
public struct DifferentialBackend: Sendable {
    /// Writes rows, and deletes ids, in one transaction of a client outside this library
    /// (for SQLite, plain SQL on a connection of its own): puts first, in order, then deletes.
    /// A put of an id that exists replaces its row, as an `UPDATE` would.
    public typealias ForeignWriter = @Sendable (_ configuration: StoreConfiguration, _ entity: String, _ put: [Row], _ delete: [Value]) throws -> Void

    /// How failures name this backend.
    public let name: String
    public let harness: ConformanceHarness
    public let foreignWriter: ForeignWriter?

    public init(_ name: String, harness: ConformanceHarness, foreignWriter: ForeignWriter? = nil) {
        self.name = name
        self.harness = harness
        self.foreignWriter = foreignWriter
    }
}
