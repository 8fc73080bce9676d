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
