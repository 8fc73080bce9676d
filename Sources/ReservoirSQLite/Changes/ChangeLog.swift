import Foundation
import Reservoir

/// The persisted change log, `_reservoir_changes(change, entity, id, kind, ids, sequence)`.
///
/// Two writers fill it, in the writing transaction:
/// - **this library** logs each change set itself, one row per entity and kind: `id` holds
///   the record's id when the group has one record, else `ids` holds the group's ids packed
///   (``PackedIDs``). Its writer connection runs with triggers off, so a bulk insert costs
///   one log row, not one per record;
/// - **any other SQLite client** (plain SQL) is logged by triggers on every entity table,
///   one row per insert, update and delete, with a NULL `sequence`.
///
/// A change set is closed by the sequence number on its *last* row: a row belongs to the
/// change set closed by the first row at or after it that has a sequence. Because only one
/// transaction writes at a time, the rows after the last closed change set are exactly
/// those written by plain SQL clients; they are *pending*:
///
/// - this library's write transaction first closes pending rows as their own change set,
///   then logs its own change set with the sequence the core passes to
///   ``WriteTransaction/record(_:)``, closed by its last row, before it commits;
/// - ``SQLiteBackend/commitToken()`` closes pending rows as soon as it notices a commit,
///   so a plain SQL write reaches subscriptions within one poll.
///
/// The row closing a change set also holds its commit's identity (`commit_id`, the bits of
/// ``ChangeSet/commit``; for plain SQL a random one made when the rows are numbered; NULL in
/// files written before identities). Sequences are consecutive. Readers net each change set's rows per record (insert then
/// delete is nothing, delete then insert is an update, …). Retention keeps the newest
/// `retention` change sets.
enum ChangeLog {
    struct Head {
        /// The newest sequence number, 0 when none.
        var sequence: UInt64
        /// Its commit's identity, 0 when none or not known.
        var commit: UInt64 = 0
        /// The row that closes it (the last row of the newest change set), 0 when none.
        var lastChange: Int64
    }

    /// The newest closed change set: a backward scan that passes only pending rows.
    static func head(_ connection: Connection) throws -> Head {
        let statement = try connection.cached(
            "SELECT change, sequence, commit_id FROM _reservoir_changes WHERE sequence IS NOT NULL ORDER BY change DESC LIMIT 1")
        defer { statement.reset() }
        guard try statement.step() else { return Head(sequence: 0, lastChange: 0) }
        return Head(sequence: UInt64(clamping: statement.int64(at: 1)), commit: UInt64(bitPattern: statement.int64(at: 2)),
                    lastChange: statement.int64(at: 0))
    }

    /// The position of change set `sequence` while the log holds its closing row: a backward
    /// scan over the rows newer than it.
    static func commit(at sequence: UInt64, _ connection: Connection) throws -> CommitPosition? {
        let statement = try connection.cached(
            "SELECT sequence, commit_id FROM _reservoir_changes WHERE sequence <= ?1 ORDER BY change DESC LIMIT 1")
        defer { statement.reset() }
        try statement.bind(Int64(clamping: sequence), at: 1)
        guard try statement.step(), UInt64(clamping: statement.int64(at: 0)) == sequence else { return nil }
        return CommitPosition(sequence: sequence, commit: UInt64(bitPattern: statement.int64(at: 1)))
    }

    static func lastSequence(_ connection: Connection) throws -> UInt64 {
        try head(connection).sequence
    }

    /// The id of the newest change row, 0 when the log is empty.
    static func lastChange(_ connection: Connection) throws -> Int64 {
        try connection.scalar("SELECT max(change) FROM _reservoir_changes").integerValue
    }

    /// The newest change row: its id, and the sequence it closes, nil while it is pending.
    private static func newestRow(_ connection: Connection) throws -> (change: Int64, sequence: Int64?, commit: UInt64)? {
        let statement = try connection.cached("SELECT change, sequence, commit_id FROM _reservoir_changes ORDER BY change DESC LIMIT 1")
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (statement.int64(at: 0), statement.isNull(at: 1) ? nil : statement.int64(at: 1), UInt64(bitPattern: statement.int64(at: 2)))
    }

    /// Whether the newest change row belongs to no change set yet (read on any connection).
    static func hasPending(_ connection: Connection) throws -> Bool {
        try newestRow(connection).map { $0.sequence == nil } ?? false
    }

    /// Closes pending change rows as one change set and returns the head afterwards.
    /// Call inside a write transaction.
    @discardableResult
    static func numberPending(_ connection: Connection) throws -> Head {
        let head = try head(connection)
        let last = try lastChange(connection)
        guard last > head.lastChange else { return head }
        if try pendingNetToNothing(after: head.lastChange, connection) {
            // Plain SQL that changed nothing in the end (a row inserted and deleted again)
            // is no change set: numbering it would leave a sequence with no entries, which
            // readers cannot tell from history lost to retention.
            try connection.run("DELETE FROM _reservoir_changes WHERE change > ?1", [.integer(head.lastChange)])
            return head
        }
        let sequence = head.sequence + 1
        let commit = CommitPosition.newIdentity(origin: .otherClient)
        try connection.run("UPDATE _reservoir_changes SET sequence = ?1, commit_id = ?2 WHERE change = ?3",
                           [.integer(Int64(clamping: sequence)), .integer(Int64(bitPattern: commit)), .integer(last)])
        return Head(sequence: sequence, commit: commit, lastChange: last)
    }

    /// Readies the log for this library's write transaction: one look at the newest row,
    /// and only when plain SQL left pending rows, closing them first.
    static func beginWrite(_ connection: Connection) throws -> Head {
        guard let newest = try newestRow(connection) else { return Head(sequence: 0, lastChange: 0) }
        guard let sequence = newest.sequence else { return try numberPending(connection) }
        return Head(sequence: UInt64(clamping: sequence), commit: newest.commit, lastChange: newest.change)
    }

    /// Logs `changeSet`, one row per entity and kind, the last row closing it, and returns
    /// the log's head afterwards (nil when the change set is empty: nothing is logged).
    /// Call inside the write transaction that made it, on the writer connection (triggers off).
    static func record(_ changeSet: ChangeSet, _ connection: Connection) throws -> Head? {
        guard let sequence = Int64(exactly: changeSet.sequence) else {
            throw ReservoirError(.valueOutOfRange, "\(sqliteStore(connection.path)): sequence \(changeSet.sequence) does not fit SQLite's integers")
        }
        var remaining = ChangeLogCodec.groupCount(changeSet)
        guard remaining > 0 else { return nil }
        let insert = try connection.statement(.logChange)
        try ChangeLogCodec.forEachGroup(changeSet) { entity, kind, ids in
            remaining -= 1
            insert.reset()
            try insert.bind(.text(entity), at: 1)
            if ids.count == 1, let id = ids.first {
                try insert.bind(id, at: 2)
                try insert.bind(.null, at: 4)
            } else {
                try insert.bind(.null, at: 2)
                try insert.bind(.blob(PackedIDs.pack(ids)), at: 4)
            }
            try insert.bind(.text(kind.rawValue), at: 3)
            try insert.bind(remaining == 0 ? .integer(sequence) : .null, at: 5)
            try insert.bind(remaining == 0 ? .integer(Int64(bitPattern: changeSet.commit)) : .null, at: 6)
            try insert.run()
        }
        return Head(sequence: changeSet.sequence, commit: changeSet.commit, lastChange: connection.lastInsertRowID)
    }

    /// Deletes change sets `lastDropped` and older (``HistoryRetention`` decides which, every
    /// ``HistoryRetention/trimInterval`` commits): every row up to the one closing change set
    /// `lastDropped`, found by a forward scan over the rows about to be deleted. When that
    /// change set is gone already, so is everything before it.
    static func trim(through lastDropped: Int64, _ connection: Connection) throws {
        guard lastDropped >= 1 else { return }
        let statement = try connection.cached(
            "SELECT change, sequence FROM _reservoir_changes WHERE sequence >= ?1 ORDER BY change LIMIT 1")
        try statement.bind(lastDropped, at: 1)
        guard try statement.step(), statement.int64(at: 1) == lastDropped else { return statement.reset() }
        let boundary = statement.int64(at: 0)
        statement.reset()
        try connection.run("DELETE FROM _reservoir_changes WHERE change <= ?1", [.integer(boundary)])
    }

    // MARK: - Reading

    /// Entries of the change sets after `sequence`, at most `limit` change sets, netted
    /// per record, in sequence order.
    static func entries(after sequence: UInt64, limit: Int, _ connection: Connection) throws -> [ChangeLogEntry] {
        guard limit > 0 else { return [] }
        // The row closing change set `sequence` (or the newest older one): a backward scan
        // over the rows newer than it, which are the rows wanted.
        let boundary = try connection.scalar(
            "SELECT change FROM _reservoir_changes WHERE sequence <= ?1 ORDER BY change DESC LIMIT 1",
            [.integer(Int64(clamping: sequence))]
        ).integerValue
        let rows = try connection.cached(
            "SELECT change, entity, id, kind, sequence, ids, commit_id FROM _reservoir_changes WHERE change > ?1 ORDER BY change")
        defer { rows.reset() }
        try rows.bind(boundary, at: 1)
        var result: [ChangeLogEntry] = []
        var netting = ChangeLogNetting()
        var closed = 0
        while closed < limit, try rows.step() {
            try add(rows, to: &netting, connection)
            if !rows.isNull(at: 4) {
                netting.flush(sequence: UInt64(clamping: rows.int64(at: 4)), commit: UInt64(bitPattern: rows.int64(at: 6)), into: &result)
                closed += 1
            }
        }
        // Rows after the last closed change set are pending: not part of the log yet.
        return result
    }

    /// Whether the rows after `change` net to no change of any record.
    private static func pendingNetToNothing(after change: Int64, _ connection: Connection) throws -> Bool {
        let rows = try connection.cached(
            "SELECT change, entity, id, kind, sequence, ids FROM _reservoir_changes WHERE change > ?1 ORDER BY change")
        defer { rows.reset() }
        try rows.bind(change, at: 1)
        var netting = ChangeLogNetting()
        while try rows.step() { try add(rows, to: &netting, connection) }
        var nothing = true
        netting.flush { _, _, _ in nothing = false }
        return nothing
    }

    /// Adds the events of the change-log row `rows` is on (columns change, entity, id,
    /// kind, sequence, ids) to `netting`.
    private static func add(_ rows: Statement, to netting: inout ChangeLogNetting, _ connection: Connection) throws {
        guard case let .text(entity) = rows.value(at: 1), case let .text(kind) = rows.value(at: 3),
              let event = ChangeLogNetting.Event(rawValue: kind) else { return }
        if case let .blob(packed) = rows.value(at: 5) {
            guard let ids = PackedIDs.unpack(packed) else {
                throw ReservoirError(.corrupt, "\(sqliteStore(connection.path)): change-log row \(rows.int64(at: 0)) has an ids value that is not a packed id list")
            }
            for id in ids { netting.add(entity: entity, id: id, event) }
        } else {
            netting.add(entity: entity, id: rows.value(at: 2), event)
        }
    }
}
