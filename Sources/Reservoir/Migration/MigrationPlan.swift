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

/// How far a running migration got, reported by ``Store/migrate(_:progress:)``: at the start and
/// end of each step that has records to rewrite, and every 1,000 records in between.
public struct MigrationProgress: Sendable, Hashable, CustomStringConvertible {
    /// The version being applied.
    public let version: Int
    /// The step running, from 1.
    public let step: Int
    /// How many steps the version has.
    public let stepCount: Int
    /// The entity the step rewrites.
    public let entity: String
    /// Records rewritten so far in this step.
    public let recordsDone: Int
    /// Records the step rewrites.
    public let recordsTotal: Int

    /// The fraction of this step done, 0 to 1 (1 for a step with no records).
    public var fractionDone: Double {
        recordsTotal == 0 ? 1 : Double(recordsDone) / Double(recordsTotal)
    }

    /// `version 2 step 1/3 (todos): 1000/5000 records`.
    public var description: String {
        "version \(version) step \(step)/\(stepCount) (\(entity)): \(recordsDone)/\(recordsTotal) records"
    }
}
