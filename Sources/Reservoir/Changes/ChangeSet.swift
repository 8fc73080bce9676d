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

