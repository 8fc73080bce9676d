/// One persisted change-log entry: sequence, entity, record id, kind, and the identity of
/// the commit it belongs to (``CommitPosition``). Rows are not logged; readers of the log load
/// the current rows.
public struct ChangeLogEntry: Sendable, Hashable {
    /// The change set the entry belongs to.
    public var sequence: UInt64
    /// The identity of the commit that made that change set (0: not known).
    public var commit: UInt64
    /// The entity's name.
    public var entity: String
    /// The record's id.
    public var id: Value
    /// Whether the record was inserted, updated or deleted.
    public var kind: ChangeType

    /// An entry for one record's change.
    public init(sequence: UInt64, entity: String, id: Value, kind: ChangeType, commit: UInt64 = 0) {
        self.sequence = sequence
        self.commit = commit
        self.entity = entity
        self.id = id
        self.kind = kind
    }
}
