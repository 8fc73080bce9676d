import BenchSupport
import Foundation
import GRDB

/// The record as GRDB 7 Codable record, the way its documentation writes one.
struct GRDBRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "items"
    var id: Int
    var name: String
    var score: Double
    var rank: Int
    var grp: Int

    init(_ record: BenchRecord) {
        (id, name, score, rank, grp) = (record.id, record.name, record.score, record.rank, record.group)
    }
}

/// GRDB 7.10.0: a DatabasePool (WAL) with synchronous=NORMAL, as the SQLite sides run, the
/// group column indexed. Observation is ValueObservation, which re-fetches its value after
/// every commit that touches what it tracks.
final class GRDBSide: BenchSide {
    let column = TableColumn.grdb
    private(set) var pool: DatabasePool?
    private var directory: URL?

    static let sorted = GRDBRecord.order(Column("rank"), Column("name"))

    /// An empty pool in a new scratch directory.
    static func openFresh() throws -> (DatabasePool, URL) {
        let directory = try scratchDirectory("grdb")
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        let pool = try DatabasePool(path: directory.appendingPathComponent("grdb.sqlite").path, configuration: configuration)
        try pool.write { db in
            try db.create(table: "items") { table in
                table.primaryKey("id", .integer)
                table.column("name", .text).notNull()
                table.column("score", .double).notNull()
                table.column("rank", .integer).notNull()
                table.column("grp", .integer).notNull().indexed()
            }
        }
        return (pool, directory)
    }

    func reset() throws {
        close()
        let (pool, directory) = try Self.openFresh()
        self.pool = pool
        self.directory = directory
    }

    private func current() throws -> DatabasePool {
        guard let pool else { throw BenchError("GRDB: no database open") }
        return pool
    }

    func insert(_ records: ArraySlice<BenchRecord>) throws {
        try current().write { db in for record in records { try GRDBRecord(record).insert(db) } }
    }

    func fetchSorted() throws -> [Int] {
        try current().read { db in try Self.sorted.fetchAll(db) }.map(\.id)
    }

    func pointReads(_ ids: [Int]) throws -> Int {
        let pool = try current()
        var checksum = 0
        for id in ids { checksum &+= try pool.read { db in try GRDBRecord.fetchOne(db, key: id) }?.rank ?? 0 }
        return checksum
    }

    func groupReads(_ groups: [Int]) throws -> Int {
        let pool = try current()
        var checksum = 0
        for group in groups {
            let records = try pool.read { db in try GRDBRecord.filter(Column("grp") == group).order(Column("id")).fetchAll(db) }
            for record in records { groupChecksum(&checksum, id: record.id, rank: record.rank) }
        }
        return checksum
    }

    func commitEach(_ records: [BenchRecord]) throws {
        let pool = try current()
        for record in records { try pool.write { db in try GRDBRecord(record).update(db) } }
    }

    func updateAll(_ records: [BenchRecord]) throws {
        try current().write { db in for record in records { try GRDBRecord(record).update(db) } }
    }

    func close() {
        try? pool?.close()
        pool = nil
        if let directory { try? FileManager.default.removeItem(at: directory) }
        directory = nil
    }

    deinit { close() }
}

/// ValueObservations on a GRDB pool, timed as Reservoir's subscriptions are: from the start
/// of the write until every observation the commit affects has delivered its new value.
final class GRDBObservations {
    private let pool: DatabasePool
    private let received = Counter()
    private let queue = DispatchQueue(label: "grdb-observations")
    private var cancellables: [AnyDatabaseCancellable] = []

    init(pool: DatabasePool) { self.pool = pool }

    /// Starts `count` observations of `request(i)`, waiting for every initial value.
    func observe(_ count: Int, deadline: ContinuousClock.Instant, request: @escaping @Sendable (Int) -> QueryInterfaceRequest<GRDBRecord>) -> Bool {
        let expected = received.count + count
        for index in 0..<count {
            let received = self.received
            let observation = ValueObservation.tracking { db in try request(index).fetchAll(db) }
            cancellables.append(observation.start(in: pool, scheduling: .async(onQueue: queue), onError: { _ in }, onChange: { _ in received.add() }))
            if index % 100 == 0, ContinuousClock.now >= deadline { return false }
        }
        return Timing.wait(until: deadline) { received.count >= expected }
    }

    /// The median time per commit, or nil when the cap passed first (after at least one
    /// commit, the commits that finished count; before, the row did not finish).
    func commitLatency(_ records: [GRDBRecord], notified: Int, deadline: ContinuousClock.Instant) throws -> Duration? {
        var samples: [Duration] = []
        for record in records {
            if !samples.isEmpty, ContinuousClock.now >= deadline { break }
            let expected = received.count + notified
            var arrived = false
            let time = try Timing.measure {
                try pool.write { db in try record.update(db) }
                arrived = Timing.wait(until: deadline) { received.count >= expected }
            }
            guard arrived else { return nil }
            samples.append(time)
        }
        return Timing.median(samples)
    }

    func cancel() {
        cancellables.forEach { $0.cancel() }
        cancellables = []
    }

    deinit { cancel() }
}
