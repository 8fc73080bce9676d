import Foundation
import HashTreeCollections

/// The in-memory backend, `memory:`.
///
/// Tables are persistent tries (``TableRows``: rows of integer ids in a radix trie whose
/// leaves hold 32 rows encoded side by side, other ids in a hash trie), so a read snapshot
/// is an O(1) copy of the current state that later writes never disturb, and a write copies
/// O(log n) nodes instead of a table. Readers never wait for the writer: the writer works on
/// its own copy and swaps it in at commit. Indexed fields keep a value → ids map that
/// equality and `in` predicates use to narrow the scan.
/// Nothing survives the process; each `memory:` store is independent.
public final class MemoryBackend: StorageBackend {
    struct Table {
        var entity: EntityDescription
        var rows = TableRows()
        var indexes: [String: TreeDictionary<Value, TreeSet<Value>>] = [:]
    }

    /// The tables by entity name. A short array, searched first for the name's exact
    /// representation (a request names its entity with the schema's own string), which spares
    /// hashing the name on every read; then by comparing names.
    struct Tables {
        private(set) var all: [Table] = []
        private var names: [String] = []

        func position(of name: String) -> Int? {
            Row.position(of: name, in: names)
        }

        subscript(name: String) -> Table? {
            guard let position = position(of: name) else { return nil }
            return all[position]
        }

        /// The stored row, read in place (no copy of the table).
        func row(_ name: String, id: Value) -> Row? {
            guard let position = position(of: name) else { return nil }
            return all[position].rows[id]
        }

        /// Whether a row is stored under `id` (without building it).
        func contains(_ name: String, id: Value) -> Bool {
            guard let position = position(of: name) else { return false }
            return all[position].rows.contains(id)
        }

        /// Where the stored row is, for a read that builds the row after leaving the lock.
        func locate(_ name: String, id: Value) -> TableRows.Location? {
            guard let position = position(of: name) else { return nil }
            return all[position].rows.locate(id)
        }

        /// Runs `body` on `name`'s table in place, made by `creating` when there is none.
        mutating func update<R>(_ name: String, creating: () -> Table, _ body: (inout Table) throws -> R) rethrows -> R {
            if let position = position(of: name) { return try body(&all[position]) }
            all.append(creating())
            names.append(name)
            return try body(&all[all.count - 1])
        }
    }

    struct State {
        var tables = Tables()
        var sequence: UInt64 = 0
        /// The identity of the newest change set's commit.
        var commit: UInt64 = 0
        /// The store's identity, made with it (``ReadTransaction/storeIdentity()``).
        var identity = UUID()
        /// The history: the change sets ``MemoryBackend/historyRetention`` keeps, by sequence, in
        /// a persistent trie so a snapshot's copy costs nothing and a commit changes O(log n) nodes.
        var log: TreeDictionary<UInt64, ChangeSet> = [:]
        /// The oldest sequence `log` may hold (those below were trimmed).
        var logStart: UInt64 = 1
        /// What ``ReadTransaction/metadata(_:)`` returns; a persistent trie too, so a write
        /// transaction's copy costs nothing however many keys there are (a sync replica keeps
        /// one per mirrored record).
        var metadata: TreeDictionary<String, Data> = [:]
        /// Set by `close()`; kept in the state so each call takes one lock, not two.
        var isClosed = false
    }

    private let state = Locked(State())
    private let writer = NSLock()
    /// The row ``withRow(_:id:_:)`` lends.
    private let lent = LentRow()

    /// An empty in-memory store keeping `retention`'s history for the process's life.
    public init(retention: HistoryRetention = HistoryRetention(count: MemoryBackend.retention)) {
        historyRetention = retention
    }

    /// How many change sets a memory store's history keeps unless `retention=` says otherwise.
    public static let retention = 10_000

    /// The history a memory store keeps (``HistoryRetention``).
    public let historyRetention: HistoryRetention?

    /// The factory for `memory:[?retention=N&retentionage=DURATION&holdage=DURATION]`.
    public static let factory = BackendFactory(scheme: "memory", summary: "memory:[?retention=N&retentionage=DURATION&holdage=DURATION]") { configuration in
        guard configuration.location.isEmpty else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.string)\": memory: takes no location; expected exactly \"memory:\", options after a ?")
        }
        try configuration.checkOptions(allowed: StoreConfiguration.historyOptionNames)
        return MemoryBackend(retention: try configuration.historyRetention(defaultCount: retention))
    }

    /// None: nothing persists and one process holds the data.
    public var capabilities: BackendCapabilities { [] }
    /// Always "memory".
    public var location: String { "memory" }

    /// Runs `body` against the current state, an O(1) snapshot that later writes never disturb.
    public func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R {
        let current = state.withLock { $0 }
        if current.isClosed { throw Self.closedError }
        let snapshot = MemoryTransaction(state: current)
        defer { snapshot.end() }
        return try body(snapshot)
    }

    /// One lookup in the current state, without a snapshot. Only the look-up holds the lock; the
    /// row is built after (from a trie leaf the look-up retained, which no write changes).
    public func row(_ entity: String, id: Value) throws -> Row? {
        let (closed, location) = state.withLock { ($0.isClosed, $0.tables.locate(entity, id: id)) }
        if closed { throw Self.closedError }
        return location?.row
    }

    /// ``row(_:id:)``, lending `body` a row refilled in place (``StorageBackend/withRow(_:id:_:)``)
    /// when no other thread is reading into it at the time; otherwise `body` gets a row of its own.
    public func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool {
        let (closed, location) = state.withLock { ($0.isClosed, $0.tables.locate(entity, id: id)) }
        if closed { throw Self.closedError }
        guard let location else { return false }
        return try lent.withRow { try location.withRow(lending: &$0, body) }
    }

    /// Runs `body` on a copy of the state and swaps it in when `body` returns.
    public func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        writer.lock()
        defer { writer.unlock() }
        let current = state.withLock { $0 }
        if current.isClosed { throw Self.closedError }
        let transaction = MemoryTransaction(state: current)
        defer { transaction.end() }
        let result = try body(transaction)
        let committed = transaction.state
        state.withLock { if !$0.isClosed { $0 = committed } }  // a close() meanwhile stays closed
        return result
    }

    /// The last committed sequence.
    public func commitToken() throws -> UInt64 {
        let (closed, sequence) = state.withLock { ($0.isClosed, $0.sequence) }
        if closed { throw Self.closedError }
        return sequence
    }

    /// Drops the data; later calls throw `.closed`.
    public func close() {
        state.withLock { $0 = State(isClosed: true) }
    }

    private static var closedError: ReservoirError { ReservoirError.closed(store: "memory:") }
}

/// A snapshot of the memory state; writes go to its private copy. Every call after the
/// closure it was passed to has returned throws `.misuse`.
final class MemoryTransaction: WriteTransaction {
    var state: MemoryBackend.State
    private var isOpen = true

    init(state: MemoryBackend.State) { self.state = state }

    func end() { isOpen = false }

    private func checkOpen() throws {
        guard isOpen else {
            throw ReservoirError(.misuse, "memory: a transaction was used after its read or write closure returned; use it only inside the closure")
        }
    }

    func row(_ entity: String, id: Value) throws -> Row? {
        try checkOpen()
        return state.tables.row(entity, id: id)
    }

    /// The row the transaction lends ``withRow(_:id:_:)``'s body (a transaction is used by one
    /// thread at a time); nil while lent.
    private var lent: Row? = Row()

    func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool {
        try checkOpen()
        guard let location = state.tables.locate(entity, id: id) else { return false }
        var row = lent
        lent = nil
        defer { lent = row }
        return try location.withRow(lending: &row, body)
    }

    func fetch(_ query: Query) throws -> [Row] {
        var rows: [Row] = []
        try fetch(query, expecting: { rows.reserveCapacity($0) }) { rows.append($0) }
        return rows
    }

    func fetch(_ query: Query, each body: (Row) throws -> Void) throws {
        try fetch(query, expecting: { _ in }, each: body)
    }

    func count(_ query: Query) throws -> Int {
        try checkOpen()
        guard let table = state.tables[query.entity.name] else { return 0 }
        let count = query.predicate == nil ? table.rows.count : Self.matching(query, in: table, keyed: false).locations.count
        return QueryEvaluator.window(count: count, query).count
    }

    /// `QueryEvaluator.evaluate`'s answer, streamed: where each matching row is and its sort
    /// values are found first, through one row refilled in place (``matching(_:in:keyed:)``);
    /// then the rows in order are decoded again, into that row, for `body`. A fetch then builds
    /// no row of its own for each record, nor frees one: a read of 100 records by an indexed
    /// field spent more on that than on anything else.
    func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        try checkOpen()
        guard let table = state.tables[query.entity.name] else { return }
        let (locations, keys) = Self.matching(query, in: table, keyed: true)
        let order = QueryEvaluator.order(of: keys, by: query.sort, count: locations.count)
        let window = QueryEvaluator.window(count: locations.count, query)
        expecting(window.count)
        var lent: Row? = Row()
        for position in window {
            _ = try locations[order?[position] ?? position].withRow(lending: &lent, body)
        }
    }

    /// Where the rows of `table` that `query`'s predicate matches are, in the order
    /// `QueryEvaluator.evaluate` takes them (the indexed candidates', else the table's), and,
    /// when `keyed`, each one's values of `query`'s sort terms in turn. A plain loop: a
    /// closure holding the lists and the row had each access to them checked at run time.
    private static func matching(_ query: Query, in table: MemoryBackend.Table, keyed: Bool) -> (locations: [TableRows.Location], keys: [Value]) {
        var found: [TableRows.Location] = []
        if let predicate = query.predicate, let ids = candidates(predicate, in: table) {
            found.reserveCapacity(ids.count)
            for id in ids {
                if let location = table.rows.locate(id) { found.append(location) }
            }
        } else {
            found.reserveCapacity(table.rows.count)
            table.rows.forEachLocation { found.append($0) }
        }
        let sort = keyed ? query.sort : []
        let predicate = query.predicate
        var locations: [TableRows.Location] = []
        locations.reserveCapacity(found.count)
        var keys: [Value] = []
        keys.reserveCapacity(found.count * sort.count)
        var row = Row()
        for location in found {
            let admitted = switch location {
            case let .stored(stored): admit(stored, predicate, sort, &keys)
            case let .slot(leaf, slot): leaf.fill(&row, from: slot) && admit(row, predicate, sort, &keys)
            }
            if admitted { locations.append(location) }
        }
        return (locations, keys)
    }

    /// Whether `row` matches `predicate` (nil: any row); its values of `sort` are appended to
    /// `keys` when it does.
    @inline(__always)
    private static func admit(_ row: Row, _ predicate: RowPredicate?, _ sort: [SortTerm], _ keys: inout [Value]) -> Bool {
        if let predicate, !QueryEvaluator.matches(predicate, row) { return false }
        for term in sort { keys.append(row.value(term.column)) }
        return true
    }

    func entities() throws -> [EntityDescription] {
        try checkOpen()
        return state.tables.all.filter { !$0.rows.isEmpty }.map(\.entity).sorted { $0.name < $1.name }
    }

    func lastSequence() throws -> UInt64 {
        try checkOpen()
        return state.sequence
    }

    func storeIdentity() throws -> UUID? {
        try checkOpen()
        return state.identity
    }

    func lastCommit() throws -> CommitPosition {
        try checkOpen()
        return CommitPosition(sequence: state.sequence, commit: state.commit)
    }

    /// Nothing can rewind a memory store's history, so older positions are reported without
    /// their identity (which matches any).
    func commit(at sequence: UInt64) throws -> CommitPosition? {
        try checkOpen()
        if sequence == state.sequence { return CommitPosition(sequence: sequence, commit: state.commit) }
        return state.log[sequence]?.position
    }

    /// The history the store keeps for the process's life (the newest
    /// change sets ``MemoryBackend/historyRetention`` keeps): nothing outside this `Store` commits to a
    /// memory store, so only history readers use it.
    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry] {
        try checkOpen()
        guard sequence < state.sequence else { return [] }
        var entries: [ChangeLogEntry] = []
        var next = max(sequence &+ 1, state.logStart)
        var taken = 0
        while taken < limit, next <= state.sequence {
            if let changeSet = state.log[next] {
                entries.append(contentsOf: changeSet.logEntries)
                taken += 1
            }
            next += 1
        }
        return entries
    }

    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        try checkOpen()
        if state.tables.contains(entity.name, id: id) { return false }
        try put(entity, id: id, row: row)
        return true
    }

    func put(_ entity: EntityDescription, id: Value, row: Row) throws {
        try checkOpen()
        try state.tables.update(entity.name, creating: { MemoryBackend.Table(entity: entity) }) { table in
            try Self.putRow(row, id: id, entity: entity, in: &table)
        }
    }

    /// ``put(_:id:row:)`` on `table`, mutated in place so it stays uniquely referenced.
    private static func putRow(_ row: Row, id: Value, entity: EntityDescription, in table: inout MemoryBackend.Table) throws {
        if table.entity != entity {
            table.entity = entity
            table.indexes = table.indexes.filter { entity.indexes.contains($0.key) }
        }
        let old = table.rows.updateValue(row, forKey: id)
        for column in entity.indexes {
            if table.indexes[column] == nil {
                // A new index: build it from the rows already stored.
                var index: TreeDictionary<Value, TreeSet<Value>> = [:]
                table.rows.forEach { key, stored in index[stored.value(column), default: []].insert(key) }
                table.indexes[column] = index
                continue
            }
            let newKey = row.value(column)
            if let old {
                let oldKey = old.value(column)
                if oldKey.isIdentical(to: newKey) { continue }
                Self.removeFromIndex(&table.indexes[column]!, key: oldKey, id: id)
            }
            table.indexes[column]![newKey, default: []].insert(id)
        }
    }

    func delete(_ entity: EntityDescription, id: Value) throws {
        try checkOpen()
        guard state.tables.position(of: entity.name) != nil else { return }
        state.tables.update(entity.name, creating: { MemoryBackend.Table(entity: entity) }) { table in
            if let old = table.rows.removeValue(forKey: id) {
                for column in table.indexes.keys {
                    Self.removeFromIndex(&table.indexes[column]!, key: old.value(column), id: id)
                }
            }
        }
    }

    func record(_ changeSet: ChangeSet) throws {
        try checkOpen()
        state.sequence = changeSet.sequence
        state.commit = changeSet.commit
        state.log[changeSet.sequence] = changeSet
    }

    func trimChangeLog(through sequence: UInt64) throws {
        try checkOpen()
        guard sequence >= state.logStart else { return }
        for dropped in state.logStart...sequence { state.log[dropped] = nil }
        state.logStart = sequence + 1
    }

    func metadata(_ key: String) throws -> Data? {
        try checkOpen()
        return state.metadata[key]
    }

    func setMetadata(_ key: String, to value: Data?) throws {
        try checkOpen()
        state.metadata[key] = value
    }

    private static func removeFromIndex(_ index: inout TreeDictionary<Value, TreeSet<Value>>, key: Value, id: Value) {
        guard var ids = index.removeValue(forKey: key) else { return }
        ids.remove(id)
        if !ids.isEmpty { index[key] = ids }
    }

    /// Ids that may match, from an index, or nil when no index narrows the predicate.
    private static func candidates(_ predicate: RowPredicate, in table: MemoryBackend.Table) -> [Value]? {
        switch predicate {
        case let .compare(column, .equal, value):
            guard let index = table.indexes[column] else { return nil }
            return Array(index[value] ?? [])
        case let .isIn(column, values):
            guard let index = table.indexes[column] else { return nil }
            var ids: Set<Value> = []
            for value in values { ids.formUnion(index[value] ?? []) }
            return Array(ids)
        case let .and(parts):
            // Any indexed conjunct narrows the whole conjunction; take the smallest.
            return parts.compactMap { candidates($0, in: table) }.min { $0.count < $1.count }
        default:
            return nil
        }
    }
}

/// The row a memory store lends its point reads, guarded by a lock that a read only tries:
/// a read that finds it taken (another thread's read) builds a row of its own instead.
final class LentRow: @unchecked Sendable {
    private let lock = PlatformLock()
    // Unchecked: only `withRow` touches it, holding the lock.
    @exclusivity(unchecked) private var row: Row? = Row()

    deinit { lock.deallocate() }

    /// Runs `body` with the lent row, or with nil when another thread holds it.
    func withRow<R>(_ body: (inout Row?) throws -> R) rethrows -> R {
        guard lock.tryLock() else {
            var none: Row?
            return try body(&none)
        }
        defer { lock.unlock() }
        return try body(&row)
    }
}
