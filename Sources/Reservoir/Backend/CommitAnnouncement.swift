import Foundation

/// A commit's change set with its rows, as its writer announces it to other stores through a
/// commit signal that carries a payload (PostgreSQL's NOTIFY). A store whose last announced
/// commit is ``previous`` publishes ``changeSet`` as the next one without reading the commit
/// back from the change log; any other store, or one that missed an announcement, reads the log
/// as before (``HeardCommits``). Only a complete change set of records is announced: not a
/// migration's, a rewound or an incomplete one.
///
/// Deleted records' old rows are not carried: other processes' change sets never hold them
/// unless the backend logs them (``EntityChanges/deletedRows``), and an announced change set is
/// exactly what reading the log would have published.
public struct CommitAnnouncement: Sendable, Equatable {
    /// The commit the announced one followed (the store's newest before it).
    public let previous: CommitPosition
    /// The commit's change set, marked external, without deleted rows.
    public let changeSet: ChangeSet

    /// The announcement of `changeSet`, committed right after `previous`; nil for a change set
    /// that is not announced (a migration's, a rewound or an incomplete one).
    public init?(previous: CommitPosition, changeSet: ChangeSet) {
        // A change set holding the record of a schema version is a migration's wherever it was
        // made, as a read of the log takes it (``ChangeLogReader``): the store checks it.
        guard changeSet.isComplete, !changeSet.isRewound, !changeSet.isSchemaChange,
              !changeSet.entities.contains(where: { $0.entity == SchemaLedger.entityName }) else { return nil }
        self.previous = previous
        let entities = changeSet.entities.map { EntityChanges(entity: $0.entity, inserted: $0.inserted, updated: $0.updated, deleted: $0.deleted) }
        self.changeSet = ChangeSet(sequence: changeSet.sequence, entities: entities, isExternal: true, commit: changeSet.commit)
    }

    /// The announcement as printable text (base64) of at most `limit` bytes, nil when longer:
    /// a writer then sends its plain signal alone, and other stores read the commit.
    public func encoded(limit: Int) -> String? {
        var bytes: [UInt8] = [Self.format]
        ExactCoding.appendFixed(previous.sequence, &bytes)
        ExactCoding.appendFixed(previous.commit, &bytes)
        ExactCoding.appendFixed(changeSet.sequence, &bytes)
        ExactCoding.appendFixed(changeSet.commit, &bytes)
        ExactCoding.appendNumber(UInt64(changeSet.entities.count), &bytes)
        for entity in changeSet.entities {
            // Base64 makes four bytes of every three: stop once the text cannot fit.
            guard bytes.count / 3 * 4 <= limit else { return nil }
            ExactCoding.appendText(entity.entity, &bytes)
            for changes in [entity.inserted, entity.updated] {
                ExactCoding.appendNumber(UInt64(changes.count), &bytes)
                for change in changes {
                    ExactCoding.encode(change.id, into: &bytes)
                    ExactCoding.encode(change.row, into: &bytes)
                    // Base64 makes four bytes of every three: stop once the text cannot fit.
                    guard bytes.count / 3 * 4 <= limit else { return nil }
                }
            }
            ExactCoding.appendNumber(UInt64(entity.deleted.count), &bytes)
            for id in entity.deleted { ExactCoding.encode(id, into: &bytes) }
        }
        let text = Data(bytes).base64EncodedString()
        return text.utf8.count <= limit ? text : nil
    }

    /// The announcement ``encoded(limit:)`` made; throws `.corrupt` naming `source` when `text`
    /// is not one.
    public init(decoding text: String, from source: @autoclosure () -> String) throws {
        func damaged() -> ReservoirError {
            ReservoirError(.corrupt, "\(source()): a commit announcement of \(text.utf8.count) bytes is not one this library writes (expected base64 of format \(Self.format))")
        }
        guard let data = Data(base64Encoded: text), data.first == Self.format else { throw damaged() }
        var reader = ExactCoding.ByteReader(bytes: [UInt8](data.dropFirst()))
        guard let previousSequence = reader.fixed(), let previousCommit = reader.fixed(),
              let sequence = reader.fixed(), let commit = reader.fixed(), let count = reader.number() else { throw damaged() }
        var entities: [EntityChanges] = []
        for _ in 0..<min(count, UInt64(data.count)) {
            guard let name = reader.chunk().flatMap({ String(validating: $0, as: UTF8.self) }) else { throw damaged() }
            var lists: [[RowChange]] = []
            for _ in 0..<2 {
                guard let changes = reader.number() else { throw damaged() }
                var list: [RowChange] = []
                for _ in 0..<min(changes, UInt64(data.count)) {
                    guard let id = reader.value(), let row = reader.row() else { throw damaged() }
                    list.append(RowChange(id: id, row: row))
                }
                lists.append(list)
            }
            guard let deletions = reader.number() else { throw damaged() }
            var deleted: [Value] = []
            for _ in 0..<min(deletions, UInt64(data.count)) {
                guard let id = reader.value() else { throw damaged() }
                deleted.append(id)
            }
            entities.append(EntityChanges(entity: name, inserted: lists[0], updated: lists[1], deleted: deleted))
        }
        guard reader.isAtEnd else { throw damaged() }
        previous = CommitPosition(sequence: previousSequence, commit: previousCommit)
        changeSet = ChangeSet(sequence: sequence, entities: entities, isExternal: true, commit: commit)
    }

    private static let format: UInt8 = 1
}

/// What a backend heard from other writers since the store last asked (``StorageBackend/takeHeardCommits()``):
/// the commits announced with their change sets, in commit order, and whether they are all it
/// heard. When they are, and the first follows on from the store's newest commit, the store
/// publishes them and reads nothing; otherwise it reads the change log as before.
public struct HeardCommits: Sendable {
    /// Announced commits, in commit order.
    public var announcements: [CommitAnnouncement]
    /// False when something else moved the commit token too: a commit without an announcement
    /// (plain SQL, a large change set, an older writer), a replaced connection, a dropped
    /// announcement, or the backend's own safety-net check.
    public var isComplete: Bool

    /// Heard `announcements`, complete or not.
    public init(announcements: [CommitAnnouncement], isComplete: Bool) {
        self.announcements = announcements
        self.isComplete = isComplete
    }

    /// Nothing known: the store reads the change log (the default for every backend).
    public static let unknown = HeardCommits(announcements: [], isComplete: false)
}
