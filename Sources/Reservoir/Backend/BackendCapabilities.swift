/// What a backend supports. The conformance suite skips, visibly, the cases that
/// need a capability the backend lacks.
public struct BackendCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The capabilities' bits.
    public let rawValue: Int
    /// Capabilities from their bits; use the static members.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Data survives closing the store and reopening it at the same location.
    public static let persistent = BackendCapabilities(rawValue: 1 << 0)
    /// Several processes (or several `Store`s in one process) may open the same location;
    /// commits by one reach the others' subscriptions through the change log.
    public static let multiProcess = BackendCapabilities(rawValue: 1 << 1)
    /// The backend compiles predicates and sorts natively instead of using ``QueryEvaluator``.
    public static let nativeQueries = BackendCapabilities(rawValue: 1 << 2)
    /// ``StorageBackend/watchCommits(_:)`` wakes the store when another process commits, so
    /// those commits arrive within about a millisecond instead of at the next 50 ms probe.
    public static let commitSignal = BackendCapabilities(rawValue: 1 << 3)
    /// The backend opens `?mode=readonly` (and files it may not write) for reading and
    /// observing, refusing writes with `.readOnly`.
    public static let readOnlyOpening = BackendCapabilities(rawValue: 1 << 4)

    /// The capabilities' names, comma-separated, or "none".
    public var description: String {
        var names: [String] = []
        if contains(.persistent) { names.append("persistent") }
        if contains(.multiProcess) { names.append("multi-process") }
        if contains(.nativeQueries) { names.append("native queries") }
        if contains(.commitSignal) { names.append("commit signal") }
        if contains(.readOnlyOpening) { names.append("read-only opening") }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}
