/// What ``Store/verify()`` found: the backend's own check of its files, then every record
/// type's rows read back, its indexes compared with its rows, and the change log read.
///
///     let report = try store.verify()
///     if !report.isIntact { print(report) }      // one problem a line
public struct VerificationReport: Sendable, CustomStringConvertible {
    /// Each record type checked, with the number of rows read.
    public struct EntityCount: Sendable, Hashable {
        public var name: String
        public var rows: Int
    }

    /// The damage found, one sentence each, naming the record type, page or table; empty
    /// when the store is intact.
    public var problems: [String] = []
    /// The record types whose rows were read, and how many each holds.
    public var entities: [EntityCount] = []
    /// The change log's entries read, and the newest sequence.
    public var changeLogEntries = 0
    public var lastSequence: UInt64 = 0
    /// Whether the backend's own check found the files sound enough to read through it
    /// (``FileCheck/readable``); when not, no record was read.
    public var recordsRead = true

    public init() {}

    /// No problem found.
    public var isIntact: Bool { problems.isEmpty }

    public var description: String {
        var lines = entities.map { "\($0.name): \($0.rows) row\($0.rows == 1 ? "" : "s") read" }
        lines.append("change log: \(changeLogEntries) entr\(changeLogEntries == 1 ? "y" : "ies") read, last sequence \(lastSequence)")
        lines += problems.map { "damaged: " + $0 }
        lines.append(isIntact ? "intact" : "\(problems.count) problem\(problems.count == 1 ? "" : "s") found")
        return lines.joined(separator: "\n")
    }
}

