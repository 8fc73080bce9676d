/// What one committed write transaction changed.
///
/// Exactly one change set is published per committed write that changed something,
/// in commit order, with a sequence number above the previous one's, before
/// `write` returns. (Backends number change sets consecutively when they can; a
/// backend that folds commits by other SQL clients into one change set may skip numbers.) It carries the new rows of inserted and updated records, so
/// observers need not read them back.
public struct ChangeSet: Sendable, Equatable, CustomStringConvertible {
    /// Increases with every committed change set on this store (across processes).
    public let sequence: UInt64
    /// Per-entity changes, ordered by entity name.
    public let entities: [EntityChanges]
    /// Whether another process (or another `Store` on the same location) committed it.
    public let isExternal: Bool
    /// False when this store fell so far behind other processes' commits that the change
    /// log (which keeps a bounded history) no longer held them: everything up to `sequence`
    /// changed in ways no longer known, `entities` is empty, and observers must re-read.
    /// Live fetches re-fetch on it.
    public let isComplete: Bool

    /// A change set numbered `sequence`; `isExternal` marks another process's commit, `isComplete == false` a stretch lost to retention.
    public init(sequence: UInt64, entities: [EntityChanges], isExternal: Bool = false, isComplete: Bool = true) {
        self.sequence = sequence
        // Most change sets touch one entity: nothing to sort, and no copy.
        self.entities = entities.count > 1 ? entities.sorted { $0.entity < $1.entity } : entities
        self.isExternal = isExternal
        self.isComplete = isComplete
    }

    /// The changes to the entity named `entity`, if any.
    public func changes(to entity: String) -> EntityChanges? {
        entities.first { $0.entity == entity }
    }

    /// Whether any record of `entity` changed.
    public func touches(_ entity: String) -> Bool {
        changes(to: entity) != nil
    }

    /// The change-log entries this change set persists as: ``ChangeLogCodec``'s groups,
    /// one entry per id, in the order a record holds them.
    public var logEntries: [ChangeLogEntry] {
        var entries: [ChangeLogEntry] = []
        ChangeLogCodec.forEachGroup(self) { entity, kind, ids in
            ids.forEachID { entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: $0, kind: kind)) }
        }
        return entries
    }

    /// The sequence and each entity's counts, for logs.
    public var description: String {
        "#\(sequence)" + (isExternal ? " (external)" : "") + (isComplete ? " " + entities.map(\.description).joined(separator: " ") : " (incomplete: re-read)")
    }
}

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

/// A record's id and its row after the change.
public struct RowChange: Sendable, Equatable {
    /// The record's id.
    public let id: Value
    /// The record's row after the change.
    public let row: Row

    /// A record's id with its new row.
    public init(id: Value, row: Row) {
        self.id = id
        self.row = row
    }
}

/// How a record changed.
public enum ChangeType: String, Sendable, Hashable, CaseIterable, Codable {
    /// The record did not exist before the transaction.
    case inserted
    /// The record existed before and after, with a different row.
    case updated
    /// The record existed before the transaction and not after.
    case deleted
}

/// One persisted change-log entry: sequence, entity, record id, kind.
/// Rows are not logged; readers of the log load the current rows.
public struct ChangeLogEntry: Sendable, Hashable {
    /// The change set the entry belongs to.
    public var sequence: UInt64
    /// The entity's name.
    public var entity: String
    /// The record's id.
    public var id: Value
    /// Whether the record was inserted, updated or deleted.
    public var kind: ChangeType

    /// An entry for one record's change.
    public init(sequence: UInt64, entity: String, id: Value, kind: ChangeType) {
        self.sequence = sequence
        self.entity = entity
        self.id = id
        self.kind = kind
    }
}
