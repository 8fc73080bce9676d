import Reservoir

/// The persisted change log.
///
/// Triggers on every entity table append one row to `_reservoir_changes` per insert,
/// update and delete, whoever makes it (this library or any SQLite client), in the
/// writing transaction. Rows carry no sequence number: `_reservoir_commits` maps each
/// sequence to the contiguous range of change rows it covers. Because only one
/// transaction writes at a time, the rows past the newest commit's range are exactly
/// the changes made by writers that do not number their commits (plain SQL clients):
///
/// - this library's write transaction first gives such *pending* rows their own
///   sequence, then its own rows get the sequence the core passes to
///   ``WriteTransaction/record(_:)``, both before it commits;
/// - ``SQLiteBackend/commitToken()`` numbers pending rows as soon as it notices a commit,
///   so a plain SQL write reaches subscriptions within one poll.
///
/// Readers net each sequence's rows per record (insert then delete is nothing, delete then
/// insert is an update, …). Retention keeps the newest `retention` change sets.
enum ChangeLog {
    struct Head {
        /// The newest sequence number, 0 when none.
        var sequence: UInt64
        /// The last change row that sequence covers.
        var lastChange: Int64
    }

    static func head(_ connection: Connection) throws -> Head {
        let statement = try connection.cached("SELECT sequence, last_change FROM _reservoir_commits ORDER BY sequence DESC LIMIT 1")
        defer { statement.reset() }
        guard try statement.step() else { return Head(sequence: 0, lastChange: 0) }
        return Head(sequence: UInt64(clamping: statement.int64(at: 0)), lastChange: statement.int64(at: 1))
    }

    static func lastSequence(_ connection: Connection) throws -> UInt64 {
        try head(connection).sequence
    }

    /// The id of the newest change row, 0 when the log is empty.
    static func lastChange(_ connection: Connection) throws -> Int64 {
        try connection.scalar("SELECT max(change) FROM _reservoir_changes").integerValue
    }

    /// Whether change rows exist past the newest commit's range (read on any connection).
    static func hasPending(_ connection: Connection) throws -> Bool {
        try lastChange(connection) > head(connection).lastChange
    }

    /// Numbers pending change rows as one change set. Call inside a write transaction.
    /// Returns the id of the newest change row afterwards.
    @discardableResult
    static func numberPending(_ connection: Connection) throws -> Int64 {
        let head = try head(connection)
        let last = try lastChange(connection)
        if last > head.lastChange {
            try connection.run(
                "INSERT INTO _reservoir_commits(sequence, first_change, last_change) VALUES(?1, ?2, ?3)",
                [.integer(Int64(head.sequence) + 1), .integer(head.lastChange + 1), .integer(last)]
            )
        }
        return max(last, head.lastChange)
    }

    /// Records `changeSet` as covering the change rows after `start`. Call inside the
    /// write transaction that made them.
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
        try connection.run(
            "INSERT INTO _reservoir_commits(sequence, first_change, last_change) VALUES(?1, ?2, ?3)",
            [.integer(sequence), .integer(start + 1), .integer(last)]
        )
        if retention > 0 && sequence % trimInterval == 0 {
            try trim(keeping: retention, newest: sequence, connection)
        }
    }

    /// Trimming runs every this many change sets, so its cost is spread thin.
    static let trimInterval: Int64 = 64

    /// Deletes the change sets older than the newest `keeping`, and their change rows.
    static func trim(keeping: Int, newest: Int64, _ connection: Connection) throws {
        let oldestKept = newest - Int64(keeping) + 1
        guard oldestKept > 1 else { return }
        let boundary = try connection.scalar(
            "SELECT last_change FROM _reservoir_commits WHERE sequence < ?1 ORDER BY sequence DESC LIMIT 1",
            [.integer(oldestKept)]
        )
        guard case let .integer(lastDropped) = boundary else { return }
        try connection.run("DELETE FROM _reservoir_changes WHERE change <= ?1", [.integer(lastDropped)])
        try connection.run("DELETE FROM _reservoir_commits WHERE sequence < ?1", [.integer(oldestKept)])
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
        struct Commit { var sequence: UInt64; var first: Int64; var last: Int64 }
        var commits: [Commit] = []
        let select = try connection.cached(
            "SELECT sequence, first_change, last_change FROM _reservoir_commits WHERE sequence > ?1 ORDER BY sequence LIMIT ?2")
        try select.bind(Int64(clamping: sequence), at: 1)
        try select.bind(Int64(limit), at: 2)
        while try select.step() {
            commits.append(Commit(sequence: UInt64(clamping: select.int64(at: 0)), first: select.int64(at: 1), last: select.int64(at: 2)))
        }
        select.reset()
        guard let low = commits.first?.first, let high = commits.last?.last, low <= high else { return [] }

        let rows = try connection.cached(
            "SELECT change, entity, id, kind FROM _reservoir_changes WHERE change BETWEEN ?1 AND ?2 ORDER BY change")
        defer { rows.reset() }
        try rows.bind(low, at: 1)
        try rows.bind(high, at: 2)
        var result: [ChangeLogEntry] = []
        var commitIndex = 0
        var netting = Netting()
        while try rows.step() {
            let change = rows.int64(at: 0)
            while commitIndex < commits.count && change > commits[commitIndex].last {
                netting.flush(sequence: commits[commitIndex].sequence, into: &result)
                commitIndex += 1
            }
            guard commitIndex < commits.count, change >= commits[commitIndex].first,
                  case let .text(entity) = rows.value(at: 1), case let .text(kind) = rows.value(at: 3),
                  let event = Netting.Event(rawValue: kind)
            else { continue }
            netting.add(entity: entity, id: rows.value(at: 2), event)
        }
        if commitIndex < commits.count {
            netting.flush(sequence: commits[commitIndex].sequence, into: &result)
        }
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
