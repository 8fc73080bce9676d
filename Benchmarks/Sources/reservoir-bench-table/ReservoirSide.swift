import BenchSupport
import Foundation
import OpenCombineShim
import Reservoir
import ReservoirLMDB
import ReservoirPostgres
import ReservoirSQLite

/// One column of the table: a way to store the records and run the basic workloads on them.
protocol BenchSide: AnyObject {
    /// The column it fills.
    var column: TableColumn { get }
    /// Throws away the current store and opens an empty one (untimed).
    func reset() throws
    /// Stores `records` in one transaction (timed).
    func insert(_ records: ArraySlice<BenchRecord>) throws
    /// Every record, sorted by rank then name, decoded: their ids in order.
    func fetchSorted() throws -> [Int]
    /// Reads each id, each read on its own; returns a checksum of what it read.
    func pointReads(_ ids: [Int]) throws -> Int
    /// Reads each group's records by the indexed group field, in id order, each read on its
    /// own; returns a checksum of what it read.
    func groupReads(_ groups: [Int]) throws -> Int
    /// Writes each record in a transaction of its own.
    func commitEach(_ records: [BenchRecord]) throws
    /// Replaces every one of `records` (each exists) in one transaction.
    func updateAll(_ records: [BenchRecord]) throws
    /// Closes the store and removes its files.
    func close()
}

/// The checksum the group reads return: order matters, so every side must read each group's
/// records in id order.
func groupChecksum(_ checksum: inout Int, id: Int, rank: Int) {
    checksum = checksum &* 1_000_003 &+ id &* 7 &+ rank
}

/// Where a raw side's group read puts each record. In the table it goes straight into the
/// checksum: a raw side keeps nothing. With `collects` (the `raw-…-array` sides of
/// `BENCH_PROFILE`), each group's records are first appended to a new array, summed from it and
/// released with it, as the store's `fetch` returns them: the raw read an app keeping its
/// records would make, and so the floor of the store's group read (Benchmarks/NOTES.md).
struct GroupSink {
    let collects: Bool
    private(set) var checksum = 0
    private var records: [BenchRecord] = []

    init(collects: Bool) { self.collects = collects }

    @inline(__always)
    mutating func take(_ record: BenchRecord) {
        if collects { records.append(record) } else { groupChecksum(&checksum, id: record.id, rank: record.rank) }
    }

    @inline(__always)
    mutating func endGroup() {
        guard collects else { return }
        for record in records { groupChecksum(&checksum, id: record.id, rank: record.rank) }
        records = []
    }
}

/// Reservoir through `Store`, on one backend (`memory:`, `sqlite:`, `lmdb:` or a PostgreSQL
/// server), with `@Storable` records or, for the `Codable` lines, ``CodableBenchRecord``.
///
/// Not generic itself: each workload calls a generic helper with a concrete record type, so
/// the helpers are specialized as an app's code calling `Store` with its own type is (a
/// generic class reached through `any BenchSide` would run every `Store` call unspecialized).
final class ReservoirSide: BenchSide {
    enum Records { case storable, codable }

    let column: TableColumn
    let records: Records
    private let scheme: String
    private var store: Store?
    private var directory: URL?
    private var postgresSchema: String?
    /// The records the bulk insert stores, made before any timing.
    private var prepared: (ids: ClosedRange<Int>, storable: [BenchRecord], codable: [CodableBenchRecord])?

    init(_ column: TableColumn, _ records: Records = .storable) throws {
        self.column = column
        self.records = records
        switch column {
        case .memory: scheme = "memory"
        case .sqlite: scheme = "sqlite"
        case .lmdb: scheme = "lmdb"
        case .postgres: scheme = "postgres"
        default: throw BenchError("\(column.title) is not a Reservoir backend")
        }
    }

    /// Converts the records the bulk insert will store, outside the timing.
    func prepare(_ slice: ArraySlice<BenchRecord>) {
        guard let first = slice.first?.id, let last = slice.last?.id else { return }
        prepared = (first...last, records == .storable ? Array(slice) : [], records == .codable ? slice.map(CodableBenchRecord.init) : [])
    }

    /// Opens an empty store of this side's backend in a new scratch directory (or schema).
    func openFresh() throws -> (Store, URL) {
        let directory = try scratchDirectory(scheme)
        var configuration = ReservoirSides.configuration(scheme, in: directory)
        if scheme == "postgres" {
            let schema = try BenchPostgres.shared.freshSchema()
            postgresSchema = schema
            configuration = try BenchPostgres.shared.configuration(schema: schema)
        }
        return (try Store.open(configuration, registry: ReservoirSides.registry), directory)
    }

    func reset() throws {
        close()
        let (store, directory) = try openFresh()
        self.store = store
        self.directory = directory
        switch records {
        case .storable: try Self.makeTable(BenchRecord.self, in: store)
        case .codable: try Self.makeTable(CodableBenchRecord.self, in: store)
        }
    }

    /// The raw sides and GRDB make their table in `reset`, untimed; a store makes its own at
    /// its first write of the entity (on PostgreSQL its whole layout too, a trigger and a column
    /// at a time). One record written and deleted here makes it, so the timed bulk insert loads
    /// an existing, empty table as theirs does. Id 0: the dataset's ids start at 1.
    private static func makeTable<Record: BenchStorable>(_ type: Record.Type, in store: Store) throws {
        let record = Record(BenchRecord(id: 0, name: "", score: 0, rank: 0, group: 0))
        try store.write { try $0.insert(record) }
        _ = try store.write { try $0.delete(Record.self, id: 0) }
    }

    private func current() throws -> Store {
        guard let store else { throw BenchError("\(column.title): no store open") }
        return store
    }

    func insert(_ slice: ArraySlice<BenchRecord>) throws {
        let store = try current()
        let matches = prepared.map { $0.ids == (slice.first?.id ?? 0)...(slice.last?.id ?? 0) } ?? false
        switch records {
        case .storable: try Self.insert(matches ? prepared?.storable ?? [] : Array(slice), into: store)
        case .codable: try Self.insert(matches ? prepared?.codable ?? [] : slice.map(CodableBenchRecord.init), into: store)
        }
    }

    func fetchSorted() throws -> [Int] {
        switch records {
        case .storable: return try Self.fetchSorted(BenchRecord.self, from: current())
        case .codable: return try Self.fetchSorted(CodableBenchRecord.self, from: current())
        }
    }

    func pointReads(_ ids: [Int]) throws -> Int {
        switch records {
        case .storable: return try Self.pointReads(BenchRecord.self, ids, from: current())
        case .codable: return try Self.pointReads(CodableBenchRecord.self, ids, from: current())
        }
    }

    func groupReads(_ groups: [Int]) throws -> Int {
        switch records {
        case .storable: return try Self.groupReads(BenchRecord.self, groups, from: current())
        case .codable: return try Self.groupReads(CodableBenchRecord.self, groups, from: current())
        }
    }

    func commitEach(_ changed: [BenchRecord]) throws {
        switch records {
        case .storable: try Self.commitEach(changed, into: current())
        case .codable: try Self.commitEach(changed.map(CodableBenchRecord.init), into: current())
        }
    }

    func updateAll(_ changed: [BenchRecord]) throws {
        switch records {
        case .storable: try Self.updateAll(changed, into: current())
        case .codable: try Self.updateAll(changed.map(CodableBenchRecord.init), into: current())
        }
    }

    // MARK: - The workloads, specialized per record type

    private static func insert<Record: BenchStorable>(_ records: [Record], into store: Store) throws {
        try store.write { tx in for record in records { try tx.insert(record) } }
    }

    private static func fetchSorted<Record: BenchStorable>(_ type: Record.Type, from store: Store) throws -> [Int] {
        try store.fetch(Record.sorted).map(\.id)
    }

    private static func pointReads<Record: BenchStorable>(_ type: Record.Type, _ ids: [Int], from store: Store) throws -> Int {
        var checksum = 0
        for id in ids { checksum &+= try store.get(Record.self, id: id)?.rank ?? 0 }
        return checksum
    }

    private static func groupReads<Record: BenchStorable>(_ type: Record.Type, _ groups: [Int], from store: Store) throws -> Int {
        var checksum = 0
        for group in groups {
            for record in try store.fetch(Record.inGroup(group)) { groupChecksum(&checksum, id: record.id, rank: record.rank) }
        }
        return checksum
    }

    private static func commitEach<Record: BenchStorable>(_ records: [Record], into store: Store) throws {
        for record in records { try store.write { try $0.update(record) } }
    }

    private static func updateAll<Record: BenchStorable>(_ records: [Record], into store: Store) throws {
        try store.write { tx in for record in records { try tx.update(record) } }
    }

    func close() {
        store?.close()
        store = nil
        if let directory { try? FileManager.default.removeItem(at: directory) }
        directory = nil
        if let postgresSchema { BenchPostgres.shared.drop(schema: postgresSchema) }
        postgresSchema = nil
    }

    deinit { close() }
}

/// What every Reservoir side shares: the registry and the configuration strings.
enum ReservoirSides {
    /// A registry knowing every backend the table runs; the writer child process uses it too.
    static let registry = BackendRegistry([.sqlite, .lmdb, .postgres])

    /// The sorted request of the fetch row and of the 1 and 100 subscription rows.
    static let sorted = BenchRecord.sorted

    /// The request of one group's distinct subscription: its records, sorted as `sorted`.
    static func group(_ group: Int) -> FetchRequest<BenchRecord> {
        FetchRequest<BenchRecord>(where: \.group == group, sortBy: [.ascending(\.rank), .ascending(\.name)])
    }

    /// The configuration string of a new store in `directory`: SQLite at its default
    /// (WAL, synchronous=NORMAL, as raw SQLite and GRDB run here), LMDB without fsync
    /// (durability=none, as raw LMDB runs with MDB_NOSYNC).
    static func configuration(_ scheme: String, in directory: URL) -> String {
        switch scheme {
        case "sqlite": return "sqlite:" + directory.appendingPathComponent("store.sqlite").path
        case "lmdb": return "lmdb:" + directory.appendingPathComponent("env").path + "?durability=none&mapsize=4GiB"
        default: return "memory:"
        }
    }
}

/// Live subscriptions on a Reservoir store: subscribe, then time one-record commits from
/// the start of `write` until every subscriber the commit affects has received its difference.
final class ReservoirSubscriptions {
    private let store: Store
    private let received = Counter()
    private var cancellables: [AnyCancellable] = []

    init(store: Store) { self.store = store }

    /// Subscribes `count` times to `request(i)`, waiting for every initial value.
    func subscribe(_ count: Int, deadline: ContinuousClock.Instant, request: (Int) -> FetchRequest<BenchRecord>) throws {
        let expected = received.count + count
        for index in 0..<count {
            let received = self.received
            cancellables.append(store.differencesPublisher(for: request(index))
                .sink(receiveCompletion: { _ in }, receiveValue: { _ in received.add() }))
        }
        guard Timing.wait(until: deadline, { received.count >= expected }) else {
            throw BenchError("initial values: \(received.count) of \(expected)")
        }
    }

    /// The median time per commit of `records`, each notifying `notified` subscribers.
    func commitLatency(_ records: [BenchRecord], notified: Int, deadline: ContinuousClock.Instant) throws -> Duration {
        var samples: [Duration] = []
        for record in records {
            let expected = received.count + notified
            var arrived = false
            samples.append(try Timing.measure {
                try store.write { try $0.update(record) }
                arrived = Timing.wait(until: deadline) { received.count >= expected }
            })
            guard arrived else { throw BenchError("a commit reached \(received.count - expected + notified) of \(notified) subscribers before the cap") }
            if received.count != expected { throw BenchError("a commit notified \(received.count - expected + notified) subscribers, expected \(notified)") }
        }
        return Timing.median(samples)
    }

    func cancel() {
        cancellables.forEach { $0.cancel() }
        cancellables = []
    }

    deinit { cancel() }
}
