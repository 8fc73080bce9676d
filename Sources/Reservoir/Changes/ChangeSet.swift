import Foundation

/// What one committed write transaction changed.
///
/// Exactly one change set is published per committed write that changed something,
/// in commit order, with a sequence number above the previous one's, before
/// `write` returns. (Backends number change sets consecutively when they can; a
/// backend that folds commits by other SQL clients into one change set may skip numbers.) It carries the new rows of inserted and updated records, so
/// observers need not read them back.
///
/// The one exception to rising sequences: when the store finds that its history was rewound
/// (commits it announced were lost in a crash, or an older backup was restored, and their
/// numbers may be given to new commits), it announces a change set marked ``isRewound`` at the
/// store's current position, at or below sequences already announced; what was announced
/// after that position is void, and observers re-read. See ``CommitPosition``.
public struct ChangeSet: Sendable, Equatable, CustomStringConvertible {
    /// Increases with every committed change set on this store (across processes), except
    /// at an ``isRewound`` change set.
    public let sequence: UInt64
    /// The identity of the commit that made it (random, see ``CommitPosition``; 0 when the
    /// change log that held it predates identities).
    public let commit: UInt64
    /// Per-entity changes, ordered by entity name.
    public let entities: [EntityChanges]
    /// Whether another process (or another `Store` on the same location) committed it.
    public let isExternal: Bool
    /// False when this store fell so far behind other processes' commits that the change
    /// log (which keeps a bounded history) no longer held them: everything up to `sequence`
    /// changed in ways no longer known, `entities` is empty, and observers must re-read.
    /// Live fetches re-fetch on it.
    public let isComplete: Bool
    /// True when the store found its history rewound (see the type's summary): the change
    /// sets announced after ``sequence`` were lost, `entities` is empty, ``isComplete`` is
    /// false, and observers must re-read. Live fetches re-fetch on it.
    public let isRewound: Bool
    /// True when the commit was a migration (``Store/migrate(_:)``): the store's schema changed,
    /// records of any entity may have been rewritten, renamed or dropped, ``isComplete`` is
    /// false, and observers must re-read rather than decode rows of the old shape. Live fetches
    /// re-fetch on it. `entities` holds only the store's record of the applied version (the
    /// `reservoir_schema_versions` entity), which is how the change log carries the mark to
    /// other processes and history readers (``HistoryChangeSet/isSchemaChange``).
    public let isSchemaChange: Bool
    /// The identity of the store that published it (``ReadTransaction/storeIdentity()``), set
    /// by the store when it publishes the change set.
    public internal(set) var store: UUID?

    /// A change set numbered `sequence`, made by the commit `commit`; `isExternal` marks
    /// another process's commit, `isComplete == false` a stretch lost to retention, and
    /// `isRewound` a history found rewound, and `isSchemaChange` a migration (each of which
    /// implies `isComplete == false`).
    public init(sequence: UInt64, entities: [EntityChanges], isExternal: Bool = false, isComplete: Bool = true,
                commit: UInt64 = 0, isRewound: Bool = false, isSchemaChange: Bool = false) {
        self.sequence = sequence
        self.commit = commit
        self.isRewound = isRewound
        self.isSchemaChange = isSchemaChange
        // Most change sets touch one entity: nothing to sort, and no copy.
        self.entities = entities.count > 1 ? entities.sorted { $0.entity < $1.entity } : entities
        self.isExternal = isExternal
        self.isComplete = isComplete && !isRewound && !isSchemaChange
    }

    /// The change set's place in the store's history.
    public var position: CommitPosition {
        CommitPosition(sequence: sequence, commit: commit)
    }

    /// The token to continue the store's history from, after this change set
    /// (``Store/history(after:limit:)``).
    public var historyToken: HistoryToken {
        HistoryToken(store: store, position: position)
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
            ids.forEachID { entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: $0, kind: kind, commit: commit)) }
        }
        return entries
    }

    /// The sequence and each entity's counts, for logs.
    public var description: String {
        "#\(sequence)" + (isExternal ? " (external)" : "") + (isRewound ? " (history rewound: re-read)" : isSchemaChange ? " (schema change: re-read)" : isComplete ? " " + entities.map(\.description).joined(separator: " ") : " (incomplete: re-read)")
    }
}

