// Compares the SQLite backend, through Store, with the raw SQLite C API on the same
// 100,000 records, in one run:
//
//     cd Benchmarks && swift run -c release reservoir-sqlite-bench [records] [repetitions]
//
// Each figure is the best of `repetitions` runs (3 by default; the bulk insert on a fresh
// database each time), raw and Reservoir alternating so load from other processes falls on
// both alike. Both sides use WAL mode with synchronous=NORMAL. A third column times the
// backend alone through the StorageBackend SPI with pre-encoded rows; a fourth, Store with the
// records mapped by `@RowMapped` (generated makeRow / init(row:)) instead of Codable; a fifth, GRDB
// 7.10.0 with Codable records, for comparison (a benchmark dependency only).
// BENCH_PROFILE=bulk|fetch|reads|commits|spi|spibulk|spicommits|rawbulk|rawstaticbulk|rawcommits|mappedbulk|codec runs
// one part alone, for a profiler (BENCH_NOLOG=1 with spicommits leaves the change log out).
import CSQLiteRaw
import Foundation
import GRDB
import Reservoir
import ReservoirMacros
import ReservoirSQLite

/// GRDB has a Row too; this file means Reservoir's.
typealias Row = Reservoir.Row

struct Item: Storable {
    var id: Int
    var name: String
    var score: Double
    var count: Int
    var tag: String?

    static let schema = Schema<Item>("items", fields: [.field(\.name), .field(\.score), .field(\.count), .field(\.tag)])
}

/// The same records mapped by `@RowMapped` (its generated makeRow / init(row:)), without Codable.
@RowMapped
struct MappedItem: Storable {
    var id: Int
    var name: String
    var score: Double
    var count: Int
    var tag: String?

    static let schema = Schema<MappedItem>("items", fields: [.field(\.name), .field(\.score), .field(\.count), .field(\.tag)])

    init(_ item: Item) {
        (id, name, score, count, tag) = (item.id, item.name, item.score, item.count, item.tag)
    }
}

let recordCount = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let repetitions = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 3 : 3
let commitCount = 1_000

func makeItems(_ count: Int) -> [Item] {
    var state: UInt64 = 0x1234_5678
    func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
    return (1...count).map { id in
        Item(id: id, name: "item-" + String(next() % 1_000_000, radix: 16), score: Double(next() % 10_000) / 7,
             count: Int(next() % 1000), tag: id % 3 == 0 ? nil : "tag\(id % 10)")
    }
}

let items = makeItems(recordCount)
let mappedItems = items.map(MappedItem.init)
var lookupOrder = Array(1...recordCount)
do {
    var state: UInt64 = 42
    for index in stride(from: lookupOrder.count - 1, to: 0, by: -1) {
        state = state &* 6_364_136_223_846_793_005 &+ 1
        lookupOrder.swapAt(index, Int((state >> 33) % UInt64(index + 1)))
    }
}

func scratchDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("reservoir-bench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func measure(_ body: () throws -> Void) rethrows -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return clock.now - start
}


// MARK: - Raw C API

final class RawDatabase {
    let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    init(path: String) {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            fatalError("raw open failed")  // a benchmark on a scratch directory; not library code
        }
        db = handle
        exec("PRAGMA journal_mode = WAL")
        exec("PRAGMA synchronous = NORMAL")
        exec("CREATE TABLE IF NOT EXISTS items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL NOT NULL, count INTEGER NOT NULL, tag TEXT)")
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    func exec(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { fatalError("raw exec failed: \(sql): \(String(cString: sqlite3_errmsg(db)))") }
    }

    func statement(_ sql: String) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
            fatalError("raw prepare failed: \(sql)")
        }
        statements[sql] = statement
        return statement
    }

    func bind(_ text: String, _ statement: OpaquePointer, _ index: Int32) {
        var text = text
        text.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                _ = bench_sqlite3_bind_text_transient(statement, index, $0.baseAddress, Int32($0.count))
            }
        }
    }

    func insert(_ items: [Item]) {
        exec("BEGIN")
        let insert = statement("INSERT INTO items(id, name, score, count, tag) VALUES(?, ?, ?, ?, ?)")
        for item in items {
            sqlite3_bind_int64(insert, 1, Int64(item.id))
            bind(item.name, insert, 2)
            sqlite3_bind_double(insert, 3, item.score)
            sqlite3_bind_int64(insert, 4, Int64(item.count))
            if let tag = item.tag { bind(tag, insert, 5) } else { sqlite3_bind_null(insert, 5) }
            guard sqlite3_step(insert) == SQLITE_DONE else { fatalError("raw insert failed") }
            sqlite3_reset(insert)
        }
        exec("COMMIT")
    }

    /// The bulk insert with texts bound in place (SQLITE_STATIC), the statement stepped
    /// while they are lent: SQLite copies nothing. Not the baseline (C programs commonly bind
    /// SQLITE_TRANSIENT, as the insert above does); `BENCH_PROFILE=rawstaticbulk` times it.
    func insertLendingTexts(_ items: [Item]) {
        exec("BEGIN")
        let insert = statement("INSERT INTO items(id, name, score, count, tag) VALUES(?, ?, ?, ?, ?)")
        func lend(_ text: String, at index: Int32, _ body: () -> Void) {
            var text = text
            text.withUTF8 { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    _ = bench_sqlite3_bind_text_static(insert, index, $0.baseAddress, Int32($0.count))
                    body()
                }
            }
        }
        for item in items {
            sqlite3_bind_int64(insert, 1, Int64(item.id))
            sqlite3_bind_double(insert, 3, item.score)
            sqlite3_bind_int64(insert, 4, Int64(item.count))
            lend(item.name, at: 2) {
                let step = {
                    guard sqlite3_step(insert) == SQLITE_DONE else { fatalError("raw insert failed") }
                    sqlite3_reset(insert)
                }
                if let tag = item.tag {
                    lend(tag, at: 5, step)
                } else {
                    sqlite3_bind_null(insert, 5)
                    step()
                }
            }
        }
        exec("COMMIT")
    }

    func text(_ statement: OpaquePointer, _ index: Int32) -> String {
        let count = Int(sqlite3_column_bytes(statement, index))
        guard let text = sqlite3_column_text(statement, index) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    func item(_ statement: OpaquePointer) -> Item {
        Item(id: Int(sqlite3_column_int64(statement, 0)), name: text(statement, 1), score: sqlite3_column_double(statement, 2),
             count: Int(sqlite3_column_int64(statement, 3)),
             tag: sqlite3_column_type(statement, 4) == SQLITE_NULL ? nil : text(statement, 4))
    }

    func fetchAllSorted() -> [Item] {
        let select = statement("SELECT id, name, score, count, tag FROM items ORDER BY name, id")
        defer { sqlite3_reset(select) }
        var result: [Item] = []
        while sqlite3_step(select) == SQLITE_ROW { result.append(item(select)) }
        return result
    }

    func get(_ id: Int) -> Item? {
        let select = statement("SELECT id, name, score, count, tag FROM items WHERE id = ?")
        defer { sqlite3_reset(select) }
        sqlite3_bind_int64(select, 1, Int64(id))
        return sqlite3_step(select) == SQLITE_ROW ? item(select) : nil
    }

    func update(_ item: Item) {
        let update = statement("UPDATE items SET name = ?, score = ?, count = ?, tag = ? WHERE id = ?")
        bind(item.name, update, 1)
        sqlite3_bind_double(update, 2, item.score)
        sqlite3_bind_int64(update, 3, Int64(item.count))
        if let tag = item.tag { bind(tag, update, 4) } else { sqlite3_bind_null(update, 4) }
        sqlite3_bind_int64(update, 5, Int64(item.id))
        guard sqlite3_step(update) == SQLITE_DONE else { fatalError("raw update failed") }
        sqlite3_reset(update)
    }
}

// MARK: - GRDB, for comparison

/// The same record as a GRDB Codable record.
struct GRDBItem: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "items"
    var id: Int
    var name: String
    var score: Double
    var count: Int
    var tag: String?

    init(_ item: Item) {
        (id, name, score, count, tag) = (item.id, item.name, item.score, item.count, item.tag)
    }
}

/// GRDB 7 with a DatabasePool (WAL) and synchronous=NORMAL, as the other sides run.
func openGRDB(_ path: String) throws -> DatabasePool {
    var configuration = Configuration()
    configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
    let pool = try DatabasePool(path: path, configuration: configuration)
    try pool.write { db in
        try db.create(table: "items", ifNotExists: true) { table in
            table.primaryKey("id", .integer)
            table.column("name", .text).notNull()
            table.column("score", .double).notNull()
            table.column("count", .integer).notNull()
            table.column("tag", .text)
        }
    }
    return pool
}

// MARK: - Runs

struct Figures {
    var bulkInsert = Duration.seconds(1_000_000)
    var fetchAll = Duration.seconds(1_000_000)
    var pointReads = Duration.seconds(1_000_000)
    var commits = Duration.seconds(1_000_000)
}

nonisolated(unsafe) var checksum = 0

/// The backend alone, through the SPI with rows (no Codable, no change tracking): the
/// part of each operation the SQLite backend is responsible for.
@MainActor func runSPI(_ rows: [Row]) throws -> Figures {
    var figures = Figures()
    let entity = Item.schema.entity
    let sorted = try FetchRequest<Item>(sortBy: [.ascending(\.name)]).query()
    for repetition in 0..<repetitions {
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = try SQLiteBackend(path: directory.appendingPathComponent("spi.sqlite").path)
        defer { backend.close() }
        figures.bulkInsert = min(figures.bulkInsert, try measure {
            try backend.write { tx in
                for row in rows { try tx.put(entity, id: row.value("id"), row: row) }
                try tx.record(ChangeSet(sequence: 1, entities: [EntityChanges(entity: "items", inserted: rows.map { RowChange(id: $0.value("id"), row: $0) })]))
            }
        })
        figures.fetchAll = min(figures.fetchAll, try measure { checksum &+= try backend.read { try $0.fetch(sorted) }.count })
        figures.pointReads = min(figures.pointReads, try measure {
            for id in lookupOrder { checksum &+= try backend.read { try $0.row("items", id: .integer(Int64(id))) }?.count ?? 0 }
        })
        figures.commits = min(figures.commits, try measure {
            for index in 0..<commitCount {
                var row = rows[lookupOrder[index] - 1]
                row["score"] = .real(Double(index + repetition))
                let sequence = UInt64(2 + repetition * commitCount + index)
                try backend.write { tx in
                    try tx.put(entity, id: row.value("id"), row: row)
                    try tx.record(ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "items", updated: [RowChange(id: row.value("id"), row: row)])]))
                }
            }
        })
    }
    return figures
}

/// Runs both sides, alternating raw and Reservoir within each repetition so that load
/// from other processes on the machine falls on both alike; keeps the best time of each.
@MainActor func runBoth(rows: [Row]) throws -> (raw: Figures, reservoir: Figures, mapped: Figures, spi: Figures, grdb: Figures) {
    var grdb = Figures()
    let grdbItems = items.map(GRDBItem.init)
    let grdbDirectory = scratchDirectory()
    defer { try? FileManager.default.removeItem(at: grdbDirectory) }
    var raw = Figures()
    var reservoir = Figures()
    var mapped = Figures()
    var spi = Figures()
    let entity = Item.schema.entity
    let spiDirectory = scratchDirectory()
    defer { try? FileManager.default.removeItem(at: spiDirectory) }
    let registry = BackendRegistry([.sqlite])
    let rawDirectory = scratchDirectory()
    let reservoirDirectory = scratchDirectory()
    defer {
        try? FileManager.default.removeItem(at: rawDirectory)
        try? FileManager.default.removeItem(at: reservoirDirectory)
    }
    let rawPath = rawDirectory.appendingPathComponent("raw.sqlite").path
    let reservoirPath = "sqlite:" + reservoirDirectory.appendingPathComponent("reservoir.sqlite").path

    for repetition in 0..<repetitions {
        // Bulk insert: the first repetition's databases are kept for the other operations.
        let rawScratch = repetition == 0 ? rawDirectory : scratchDirectory()
        let reservoirScratch = repetition == 0 ? reservoirDirectory : scratchDirectory()
        do {
            let database = RawDatabase(path: rawScratch.appendingPathComponent("raw.sqlite").path)
            raw.bulkInsert = min(raw.bulkInsert, measure { database.insert(items) })
        }
        do {
            let store = try Store.open("sqlite:" + reservoirScratch.appendingPathComponent("reservoir.sqlite").path, registry: registry)
            defer { store.close() }
            reservoir.bulkInsert = min(reservoir.bulkInsert, try measure { try store.write { tx in for item in items { try tx.insert(item) } } })
        }
        do {
            let scratch = scratchDirectory()
            defer { try? FileManager.default.removeItem(at: scratch) }
            let store = try Store.open("sqlite:" + scratch.appendingPathComponent("mapped.sqlite").path, registry: registry)
            defer { store.close() }
            mapped.bulkInsert = min(mapped.bulkInsert, try measure { try store.write { tx in for item in mappedItems { try tx.insert(item) } } })
        }
        do {
            let spiScratch = repetition == 0 ? spiDirectory : scratchDirectory()
            defer { if repetition > 0 { try? FileManager.default.removeItem(at: spiScratch) } }
            let backend = try SQLiteBackend(path: spiScratch.appendingPathComponent("spi.sqlite").path)
            defer { backend.close() }
            spi.bulkInsert = min(spi.bulkInsert, try measure {
                try backend.write { tx in
                    for row in rows { try tx.put(entity, id: row.value("id"), row: row) }
                    try tx.record(ChangeSet(sequence: 1, entities: [EntityChanges(entity: "items", inserted: rows.map { RowChange(id: $0.value("id"), row: $0) })]))
                }
            })
        }
        do {
            let scratch = repetition == 0 ? grdbDirectory : scratchDirectory()
            defer { if repetition > 0 { try? FileManager.default.removeItem(at: scratch) } }
            let pool = try openGRDB(scratch.appendingPathComponent("grdb.sqlite").path)
            grdb.bulkInsert = min(grdb.bulkInsert, try measure { try pool.write { db in for item in grdbItems { try item.insert(db) } } })
        }
        if repetition > 0 {
            try? FileManager.default.removeItem(at: rawScratch)
            try? FileManager.default.removeItem(at: reservoirScratch)
        }
    }
    say("bulk insert done")

    let database = RawDatabase(path: rawPath)
    let grdbPool = try openGRDB(grdbDirectory.appendingPathComponent("grdb.sqlite").path)
    let store = try Store.open(reservoirPath, registry: registry)
    defer { store.close() }
    let backend = try SQLiteBackend(path: spiDirectory.appendingPathComponent("spi.sqlite").path)
    defer { backend.close() }
    let sorted = FetchRequest<Item>(sortBy: [.ascending(\.name)])
    let sortedQuery = try sorted.query()
    let mappedSorted = FetchRequest<MappedItem>(sortBy: [.ascending(\.name)])
    guard try store.fetch(mappedSorted).map(\.id) == database.fetchAllSorted().map(\.id) else {
        fatalError("@RowMapped records disagree with raw SQLite")
    }
    guard try store.fetch(sorted) == database.fetchAllSorted() else {
        fatalError("Reservoir and raw SQLite disagree on the sorted records")
    }
    for _ in 0..<repetitions {
        raw.fetchAll = min(raw.fetchAll, measure { checksum &+= database.fetchAllSorted().count })
        reservoir.fetchAll = min(reservoir.fetchAll, try measure { checksum &+= try store.fetch(sorted).count })
        mapped.fetchAll = min(mapped.fetchAll, try measure { checksum &+= try store.fetch(mappedSorted).count })
        grdb.fetchAll = min(grdb.fetchAll, try measure {
            checksum &+= try grdbPool.read { db in try GRDBItem.order(Column("name"), Column("id")).fetchAll(db) }.count
        })
        spi.fetchAll = min(spi.fetchAll, try measure { checksum &+= try backend.read { try $0.fetch(sortedQuery) }.count })
    }
    say("fetch all done")
    for _ in 0..<repetitions {
        raw.pointReads = min(raw.pointReads, measure { for id in lookupOrder { checksum &+= database.get(id)?.count ?? 0 } })
        reservoir.pointReads = min(reservoir.pointReads, try measure {
            for id in lookupOrder { checksum &+= try store.get(Item.self, id: id)?.count ?? 0 }
        })
        mapped.pointReads = min(mapped.pointReads, try measure {
            for id in lookupOrder { checksum &+= try store.get(MappedItem.self, id: id)?.count ?? 0 }
        })
        grdb.pointReads = min(grdb.pointReads, try measure {
            for id in lookupOrder { checksum &+= try grdbPool.read { db in try GRDBItem.fetchOne(db, key: id) }?.count ?? 0 }
        })
        spi.pointReads = min(spi.pointReads, try measure {
            for id in lookupOrder { checksum &+= try backend.read { try $0.row("items", id: .integer(Int64(id))) }?.count ?? 0 }
        })
    }
    say("point reads done")
    for repetition in 0..<repetitions {
        raw.commits = min(raw.commits, measure {
            for index in 0..<commitCount {
                var item = items[lookupOrder[index] - 1]
                item.score += Double(repetition + 1)
                database.update(item)
            }
        })
        reservoir.commits = min(reservoir.commits, try measure {
            for index in 0..<commitCount {
                var item = items[lookupOrder[index] - 1]
                item.score += Double(repetition + 1)
                try store.write { try $0.update(item) }
            }
        })
        mapped.commits = min(mapped.commits, try measure {
            for index in 0..<commitCount {
                var item = mappedItems[lookupOrder[index] - 1]
                item.score += Double(repetition + 11)
                try store.write { try $0.update(item) }
            }
        })
        grdb.commits = min(grdb.commits, try measure {
            for index in 0..<commitCount {
                var item = grdbItems[lookupOrder[index] - 1]
                item.score += Double(repetition + 21)
                try grdbPool.write { db in try item.update(db) }
            }
        })
        spi.commits = min(spi.commits, try measure {
            for index in 0..<commitCount {
                var row = rows[lookupOrder[index] - 1]
                row["score"] = .real(Double(index + repetition))
                let sequence = UInt64(2 + repetition * commitCount + index)
                try backend.write { tx in
                    try tx.put(entity, id: row.value("id"), row: row)
                    try tx.record(ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "items", updated: [RowChange(id: row.value("id"), row: row)])]))
                }
            }
        })
    }
    return (raw, reservoir, mapped, spi, grdb)
}

/// Unbuffered, so progress shows when the output is a file.
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func format(_ duration: Duration, per count: Int = 1) -> String {
    let (seconds, attoseconds) = duration.components
    let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    let value = nanoseconds / Double(count)
    if value >= 1e6 { return String(format: "%.1f ms", value / 1e6) }
    return String(format: "%.2f µs", value / 1e3)
}

func ratio(_ a: Duration, _ b: Duration) -> String {
    let (sa, aa) = a.components
    let (sb, ab) = b.components
    let x = Double(sa) + Double(aa) / 1e18
    let y = Double(sb) + Double(ab) / 1e18
    return String(format: "%.2f×", x / y)
}

if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "mappedbulk" {
    // Store.insert of @RowMapped records, repeated on fresh databases, for a profiler.
    for _ in 0..<repetitions {
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store.open("sqlite:" + directory.appendingPathComponent("mapped.sqlite").path, registry: BackendRegistry([.sqlite]))
        defer { store.close() }
        let time = try measure { try store.write { tx in for item in mappedItems { try tx.insert(item) } } }
        say("mapped bulk \(format(time))")
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "codec" {
    // The core's Codable row mapping alone, both ways, per record.
    for _ in 0..<repetitions {
        var rows: [Row] = []
        rows.reserveCapacity(items.count)
        let encode = try measure { for item in items { rows.append(try RowEncoder().encode(item)) } }
        var decoded: [Item] = []
        decoded.reserveCapacity(rows.count)
        let decode = try measure { for row in rows { decoded.append(try RowDecoder().decode(Item.self, from: row)) } }
        checksum &+= decoded.count
        say("encode \(format(encode, per: items.count)) decode \(format(decode, per: rows.count))")
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "rawbulk" {
    // The raw C API's bulk insert, repeated on fresh databases, for a profiler.
    for _ in 0..<repetitions {
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = RawDatabase(path: directory.appendingPathComponent("raw.sqlite").path)
        let time = measure { database.insert(items) }
        say("raw bulk \(format(time))")
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "rawstaticbulk" {
    // The raw bulk insert with and without SQLite's copy of each text, alternating.
    for _ in 0..<repetitions {
        for lending in [false, true] {
            let directory = scratchDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let database = RawDatabase(path: directory.appendingPathComponent("raw.sqlite").path)
            let time = measure { lending ? database.insertLendingTexts(items) : database.insert(items) }
            say("raw bulk \(lending ? "SQLITE_STATIC" : "SQLITE_TRANSIENT") \(format(time))")
        }
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "rawcommits" {
    do {  // scoped, so the defers clean up before exit
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = RawDatabase(path: directory.appendingPathComponent("raw.sqlite").path)
        database.insert(items)
        for round in 0..<repetitions {
            let time = measure {
                for index in 0..<commitCount {
                    var item = items[lookupOrder[index] - 1]
                    item.score += Double(round + 1)
                    database.update(item)
                }
            }
            say("raw commits \(format(time, per: commitCount))")
        }
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "spicommits" {
    do {  // scoped, so the defers clean up before exit
        let rows = try items.map { try RowEncoder().encode($0) }
        let entity = Item.schema.entity
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = try SQLiteBackend(path: directory.appendingPathComponent("spi.sqlite").path)
        defer { backend.close() }
        try backend.write { tx in
            for row in rows { try tx.put(entity, id: row.value("id"), row: row) }
            try tx.record(ChangeSet(sequence: 1, entities: [EntityChanges(entity: "items", inserted: rows.map { RowChange(id: $0.value("id"), row: $0) })]))
        }
        var sequence: UInt64 = 1
        // BENCH_NOLOG=1 leaves the change log out, to see what it costs (not a valid store).
        let logs = ProcessInfo.processInfo.environment["BENCH_NOLOG"] == nil
        for round in 0..<repetitions {
            let time = try measure {
                for index in 0..<commitCount {
                    var row = rows[lookupOrder[index % lookupOrder.count] - 1]
                    // A new value every round, like rawcommits: SQLite does not rewrite a
                    // page when an update leaves its bytes as they were.
                    row["score"] = .real(Double(index + round + 1))
                    sequence += 1
                    try backend.write { tx in
                        try tx.put(entity, id: row.value("id"), row: row)
                        if logs {
                            try tx.record(ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "items", updated: [RowChange(id: row.value("id"), row: row)])]))
                        }
                    }
                }
            }
            say("spi commits \(format(time, per: commitCount))")
        }
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "spibulk" {
    do {  // scoped, so the defers clean up before exit
        let rows = try items.map { try RowEncoder().encode($0) }
        let entity = Item.schema.entity
        for _ in 0..<repetitions {
            let directory = scratchDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let backend = try SQLiteBackend(path: directory.appendingPathComponent("spi.sqlite").path)
            defer { backend.close() }
            let time = try measure {
                try backend.write { tx in
                    for row in rows { try tx.put(entity, id: row.value("id"), row: row) }
                    try tx.record(ChangeSet(sequence: 1, entities: [EntityChanges(entity: "items", inserted: rows.map { RowChange(id: $0.value("id"), row: $0) })]))
                }
            }
            say("spi bulk \(format(time))")
        }
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["BENCH_PROFILE"] == "spi" {
    do {  // scoped, so the defers clean up before exit
        let spi = try runSPI(try items.map { try RowEncoder().encode($0) })
        say("spi bulk \(format(spi.bulkInsert)) fetch \(format(spi.fetchAll)) reads \(format(spi.pointReads, per: recordCount)) commits \(format(spi.commits, per: commitCount))")
    }
    exit(0)
}
if let operation = ProcessInfo.processInfo.environment["BENCH_PROFILE"] {
    do {  // scoped, so the defers clean up before exit
        // One of the backend's operations alone, repeated, for a profiler: bulk, fetch, reads, commits.
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store.open("sqlite:" + directory.appendingPathComponent("profile.sqlite").path, registry: BackendRegistry([.sqlite]))
        defer { store.close() }
        let time = try measure { try store.write { tx in for item in items { try tx.insert(item) } } }
        say("bulk insert \(format(time))")
        for round in 0..<(operation == "bulk" ? 0 : repetitions) {
            let time = try measure {
                switch operation {
                case "fetch": checksum &+= try store.fetch(FetchRequest<Item>(sortBy: [.ascending(\.name)])).count
                case "reads": for id in lookupOrder { checksum &+= try store.get(Item.self, id: id)?.count ?? 0 }
                default:
                    for index in 0..<commitCount {
                        var item = items[lookupOrder[index] - 1]
                        item.score += Double(round + 1)
                        try store.write { try $0.update(item) }
                    }
                }
            }
            say("\(operation) \(format(time))")
        }
    }
    exit(0)
}
say("SQLite \(String(cString: sqlite3_libversion())), \(recordCount) records, best of \(repetitions)")
let (raw, reservoir, mapped, spi, grdb) = try runBoth(rows: try items.map { try RowEncoder().encode($0) })
let rows: [(String, Duration, Duration, Duration, Duration, Duration, Int, String)] = [
    ("bulk insert, one transaction", raw.bulkInsert, reservoir.bulkInsert, mapped.bulkInsert, spi.bulkInsert, grdb.bulkInsert, 1, "1.5×"),
    ("fetch all, sorted, decoded", raw.fetchAll, reservoir.fetchAll, mapped.fetchAll, spi.fetchAll, grdb.fetchAll, 1, "1.5×"),
    ("point read (per read)", raw.pointReads, reservoir.pointReads, mapped.pointReads, spi.pointReads, grdb.pointReads, recordCount, "2×"),
    ("single-record commit (per commit)", raw.commits, reservoir.commits, mapped.commits, spi.commits, grdb.commits, commitCount, "1.5×"),
]
func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
say(pad("operation", 35) + pad("raw C API", 11) + pad("target", 8) + pad("Store", 11) + pad("ratio", 8)
    + pad("mapped", 11) + pad("ratio", 8) + pad("SPI rows", 11) + pad("ratio", 8) + pad("GRDB", 11) + "ratio")
for (name, rawTime, storeTime, mappedTime, spiTime, grdbTime, count, target) in rows {
    say(pad(name, 35) + pad(format(rawTime, per: count), 11) + pad("≤ " + target, 8)
        + pad(format(storeTime, per: count), 11) + pad(ratio(storeTime, rawTime), 8)
        + pad(format(mappedTime, per: count), 11) + pad(ratio(mappedTime, rawTime), 8)
        + pad(format(spiTime, per: count), 11) + pad(ratio(spiTime, rawTime), 8)
        + pad(format(grdbTime, per: count), 11) + ratio(grdbTime, rawTime))
}
say("Store: through Store with Codable records. mapped: through Store with the same records")
say("declared @RowMapped (generated makeRow and init(row:)). SPI rows: the SQLite backend alone,")
say("through the StorageBackend SPI with pre-encoded rows (fetch yields Rows, not decoded records).")
say("GRDB: GRDB 7.10.0 with Codable records (DatabasePool, WAL, synchronous=NORMAL), for comparison.")
say("(checksum \(checksum))")
