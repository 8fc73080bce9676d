import Reservoir

/// The persisted change log.
///
/// Triggers on every entity table append one row to `_reservoir_changes` per insert,
/// update and delete, whoever makes it (this library or any SQLite client), in the
/// writing transaction, with a NULL `sequence`. A change set is closed by writing its
/// sequence number on its *last* row: a row belongs to the change set closed by the first
/// row at or after it that has a sequence. (One more row-sized write per commit on the page
/// the triggers just wrote, rather than a row in a second table, which would add a page to
/// every commit.) Because only one transaction writes at a time, the rows after the last
/// closed change set are exactly those written by clients that do not number their commits
/// (plain SQL); they are *pending*:
///
/// - this library's write transaction first closes pending rows as their own change set,
///   then its own rows get the sequence the core passes to ``WriteTransaction/record(_:)``,
///   both before it commits;
/// - ``SQLiteBackend/commitToken()`` closes pending rows as soon as it notices a commit,
///   so a plain SQL write reaches subscriptions within one poll.
///
/// Sequences are consecutive. Readers net each change set's rows per record (insert then
/// delete is nothing, delete then insert is an update, …). Retention keeps the newest
/// `retention` change sets.
enum ChangeLog {
    struct Head {
        /// The newest sequence number, 0 when none.
        var sequence: UInt64
        /// The row that closes it (the last row of the newest change set), 0 when none.
        var lastChange: Int64
    }

    /// The newest closed change set: a backward scan that passes only pending rows.
    static func head(_ connection: Connection) throws -> Head {
        let statement = try connection.cached(
            "SELECT change, sequence FROM _reservoir_changes WHERE sequence IS NOT NULL ORDER BY change DESC LIMIT 1")
        defer { statement.reset() }
        guard try statement.step() else { return Head(sequence: 0, lastChange: 0) }
        return Head(sequence: UInt64(clamping: statement.int64(at: 1)), lastChange: statement.int64(at: 0))
    }

    static func lastSequence(_ connection: Connection) throws -> UInt64 {
        try head(connection).sequence
    }

    /// The id of the newest change row, 0 when the log is empty.
    static func lastChange(_ connection: Connection) throws -> Int64 {
        try connection.scalar("SELECT max(change) FROM _reservoir_changes").integerValue
    }

    /// Whether the newest change row belongs to no change set yet (read on any connection).
    static func hasPending(_ connection: Connection) throws -> Bool {
        try connection.scalar("SELECT sequence IS NULL FROM _reservoir_changes ORDER BY change DESC LIMIT 1").integerValue == 1
    }

    /// Closes pending change rows as one change set. Call inside a write transaction.
    /// Returns the id of the newest change row afterwards.
    @discardableResult
    static func numberPending(_ connection: Connection) throws -> Int64 {
        let head = try head(connection)
        let last = try lastChange(connection)
        if last > head.lastChange {
            try close(last, sequence: Int64(clamping: head.sequence) + 1, connection)
        }
        return max(last, head.lastChange)
    }

    private static func close(_ change: Int64, sequence: Int64, _ connection: Connection) throws {
        try connection.run("UPDATE _reservoir_changes SET sequence = ?1 WHERE change = ?2", [.integer(sequence), .integer(change)])
    }

    /// Records `changeSet` as the change rows after `start`. Call inside the write
    /// transaction that made them.
    static func record(_ changeSet: ChangeSet, after start: Int64, retention: Int, _ connection: Connection) throws {
        guard let sequence = Int64(exactly: changeSet.sequence) else {
            throw ReservoirError(.valueOutOfRange, "SQLite store \"\(connection.path)\": sequence \(changeSet.sequence) does not fit SQLite's integers")
        }
        var last = try lastChange(connection)
        if last <= start {
            // The triggers logged nothing (dropped by hand?): log the change set's own entries.
            let insert = try connection.cached("INSERT INTO _reservoir_changes(entity, id, kind) VALUES(?1, ?2, ?3)")
            for entry in changeSet.logEntries {
                insert.reset()
                try insert.bind(.text(entry.entity), at: 1)
                try insert.bind(entry.id, at: 2)
                try insert.bind(.text(entry.kind.rawValue), at: 3)
                try insert.run()
            }
            last = try lastChange(connection)
        }
        try close(last, sequence: sequence, connection)
        if retention > 0 && sequence % trimInterval == 0 {
            try trim(keeping: retention, newest: sequence, connection)
        }
    }

    /// Trimming runs every this many change sets, so its cost is spread thin.
    static let trimInterval: Int64 = 64

    /// Deletes the change sets older than the newest `keeping`: every row up to the one
    /// closing change set `newest - keeping`, found by a forward scan over the rows about
    /// to be deleted.
    static func trim(keeping: Int, newest: Int64, _ connection: Connection) throws {
        let lastDropped = newest - Int64(keeping)
        guard lastDropped >= 1 else { return }
        let statement = try connection.cached(
            "SELECT change, sequence FROM _reservoir_changes WHERE sequence >= ?1 ORDER BY change LIMIT 1")
        try statement.bind(lastDropped, at: 1)
        guard try statement.step(), statement.int64(at: 1) == lastDropped else { return statement.reset() }
        let boundary = statement.int64(at: 0)
        statement.reset()
        try connection.run("DELETE FROM _reservoir_changes WHERE change <= ?1", [.integer(boundary)])
    }

    /// Removes change rows after `start` (logged by a transaction that turned out to
    /// change nothing), so they are never mistaken for another writer's.
    static func discard(after start: Int64, _ connection: Connection) throws {
        try connection.run("DELETE FROM _reservoir_changes WHERE change > ?1", [.integer(start)])
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
            "SELECT change, entity, id, kind, sequence FROM _reservoir_changes WHERE change > ?1 ORDER BY change")
        defer { rows.reset() }
        try rows.bind(boundary, at: 1)
        var result: [ChangeLogEntry] = []
        var netting = Netting()
        var closed = 0
        while closed < limit, try rows.step() {
            if case let .text(entity) = rows.value(at: 1), case let .text(kind) = rows.value(at: 3),
               let event = Netting.Event(rawValue: kind) {
                netting.add(entity: entity, id: rows.value(at: 2), event)
            }
            if !rows.isNull(at: 4) {
                netting.flush(sequence: UInt64(clamping: rows.int64(at: 4)), into: &result)
                closed += 1
            }
        }
        // Rows after the last closed change set are pending: not part of the log yet.
        return result
    }
}

/// Nets the raw trigger events of one change set into one entry per record.
struct Netting {
    enum Event: String {
        case existed, inserted, updated, deleted

        /// Whether the record existed before this event.
        var before: Bool { self != .inserted }
        /// Whether it exists after.
        var after: Bool { self != .deleted }
    }

    private struct Key: Hashable {
        var entity: String
        var id: Value
    }

    private struct State {
        var entity: String
        var id: Value
        var existedBefore: Bool
        var existsAfter: Bool
        var changed: Bool
    }

    private var order: [Key] = []
    private var states: [Key: State] = [:]

    mutating func add(entity: String, id: Value, _ event: Event) {
        let key = Key(entity: entity, id: id)
        if var state = states[key] {
            state.existsAfter = event.after
            state.changed = state.changed || event != .existed
            states[key] = state
        } else {
            order.append(key)
            states[key] = State(entity: entity, id: id, existedBefore: event.before, existsAfter: event.after, changed: event != .existed)
        }
    }

    mutating func flush(sequence: UInt64, into result: inout [ChangeLogEntry]) {
        for key in order {
            guard let state = states[key], state.changed else { continue }
            let kind: ChangeType
            switch (state.existedBefore, state.existsAfter) {
            case (false, true): kind = .inserted
            case (true, true): kind = .updated
            case (true, false): kind = .deleted
            case (false, false): continue
            }
            result.append(ChangeLogEntry(sequence: sequence, entity: state.entity, id: state.id, kind: kind))
        }
        order.removeAll(keepingCapacity: true)
        states.removeAll(keepingCapacity: true)
    }
}
