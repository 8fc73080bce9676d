/// What ``Store/migrate(_:)`` would do to a store, from ``Store/migrationPlan(_:)``: nothing
/// is changed to find out.
public struct MigrationPlan: Sendable, CustomStringConvertible {
    /// One step that would run.
    public struct Step: Sendable, CustomStringConvertible {
        /// The version the step belongs to.
        public let version: Int
        /// The step's place in its version, from 1.
        public let index: Int
        /// The step.
        public let step: MigrationStep
        /// How many records it would read and rewrite: its entity's records at that point.
        public let records: Int

        /// `version 2 step 1: renameField "title" → "name" in todos (12 records)`.
        public var description: String {
            "version \(version) step \(index): \(step) (\(records) record\(records == 1 ? "" : "s"))"
        }
    }

    /// The store's schema version now (0: never migrated).
    public let currentVersion: Int
    /// The version the store would be at afterwards.
    public let targetVersion: Int
    /// True for a new, empty store: it would be stamped with ``targetVersion``, running no step.
    public let stampsOnly: Bool
    /// The steps that would run, in order.
    public let steps: [Step]

    /// Whether migrating would change nothing.
    public var isEmpty: Bool { currentVersion == targetVersion }

    /// The plan, one line per step.
    public var description: String {
        if isEmpty { return "at schema version \(currentVersion): nothing to do" }
        if stampsOnly { return "new store: stamped with schema version \(targetVersion), no step runs" }
        return (["schema version \(currentVersion) → \(targetVersion):"] + steps.map { "  " + $0.description }).joined(separator: "\n")
    }
}
