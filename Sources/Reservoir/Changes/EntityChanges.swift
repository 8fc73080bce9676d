/// The changes one transaction made to one entity.
public struct EntityChanges: Sendable, Equatable, CustomStringConvertible {
    /// The entity's name.
    public let entity: String
    /// Records that did not exist before the transaction, with their rows.
    public var inserted: [RowChange]
    /// Records that existed before and after, whose row changed, with their new rows.
    public var updated: [RowChange]
    /// Ids of records that existed before the transaction and not after.
    public var deleted: [Value]
    /// The rows deleted records had before the transaction, where known: always for commits
    /// made through this store; for other processes' commits only when the backend logs
    /// deleted rows (the change log otherwise holds ids only).
    public var deletedRows: [RowChange]

    /// The changes to `entity`.
    public init(entity: String, inserted: [RowChange] = [], updated: [RowChange] = [], deleted: [Value] = [], deletedRows: [RowChange] = []) {
        self.entity = entity
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.deletedRows = deletedRows
    }

    /// Whether nothing was inserted, updated or deleted.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

    /// The entity's name with its counts: `todos(+1 ~0 -2)`.
    public var description: String {
        "\(entity)(+\(inserted.count) ~\(updated.count) -\(deleted.count))"
    }
}
