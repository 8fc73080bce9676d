// Compares the SQLite backend, through Store, with the raw SQLite C API on the same
// 100,000 records, in one run:
//
//     cd Benchmarks && swift run -c release reservoir-sqlite-bench [records] [repetitions]
//
// Each figure is the best of `repetitions` runs (3 by default), on a fresh database for
// the bulk insert. Both sides use WAL mode with synchronous=NORMAL.
import CSQLiteRaw
import Foundation
import Reservoir
import ReservoirSQLite

struct Item: Storable {
    var id: Int
    var name: String
    var score: Double
    var count: Int
    var tag: String?

    static let schema = Schema<Item>("items", fields: [.field(\.name), .field(\.score), .field(\.count), .field(\.tag)])
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

func best(_ runs: Int, _ body: () throws -> Duration) rethrows -> Duration {
    var result = Duration.seconds(1_000_000)
    for _ in 0..<runs { result = min(result, try body()) }
    return result
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

// MARK: - Runs

struct Figures {
    var bulkInsert = Duration.zero
    var fetchAll = Duration.zero
    var pointReads = Duration.zero
    var commits = Duration.zero
}

var checksum = 0

@MainActor func runRaw() -> Figures {
    var figures = Figures()
    var keep: URL?
    figures.bulkInsert = best(repetitions) {
        let directory = scratchDirectory()
        defer { if keep == nil { keep = directory } else { try? FileManager.default.removeItem(at: directory) } }
        let database = RawDatabase(path: directory.appendingPathComponent("raw.sqlite").path)
        return measure { database.insert(items) }
    }
    guard let directory = keep else { return figures }
    defer { try? FileManager.default.removeItem(at: directory) }
    let database = RawDatabase(path: directory.appendingPathComponent("raw.sqlite").path)
    figures.fetchAll = best(repetitions) {
        measure { checksum &+= database.fetchAllSorted().count }
    }
    figures.pointReads = best(repetitions) {
        measure { for id in lookupOrder { checksum &+= database.get(id)?.count ?? 0 } }
    }
    figures.commits = best(repetitions) {
        measure {
            for index in 0..<commitCount {
                var item = items[lookupOrder[index] - 1]
                item.score += 1
                database.update(item)
            }
        }
    }
    return figures
}

@MainActor func runReservoir() throws -> Figures {
    var figures = Figures()
    var keep: URL?
    let registry = BackendRegistry([.sqlite])
    figures.bulkInsert = try best(repetitions) {
        let directory = scratchDirectory()
        defer { if keep == nil { keep = directory } else { try? FileManager.default.removeItem(at: directory) } }
        let store = try Store.open("sqlite:" + directory.appendingPathComponent("reservoir.sqlite").path, registry: registry)
        defer { store.close() }
        return try measure { try store.write { tx in for item in items { try tx.insert(item) } } }
    }
    guard let directory = keep else { return figures }
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try Store.open("sqlite:" + directory.appendingPathComponent("reservoir.sqlite").path, registry: registry)
    defer { store.close() }
    let sorted = FetchRequest<Item>(sortBy: [.ascending(\.name)])
    figures.fetchAll = try best(repetitions) {
        try measure { checksum &+= try store.fetch(sorted).count }
    }
    figures.pointReads = try best(repetitions) {
        try measure { for id in lookupOrder { checksum &+= try store.get(Item.self, id: id)?.count ?? 0 } }
    }
    figures.commits = try best(repetitions) {
        try measure {
            for index in 0..<commitCount {
                var item = items[lookupOrder[index] - 1]
                item.score += 1 + Double(checksum % 2)
                try store.write { try $0.update(item) }
            }
        }
    }
    // The two must agree on what they store.
    let check = scratchDirectory()
    defer { try? FileManager.default.removeItem(at: check) }
    let raw = RawDatabase(path: check.appendingPathComponent("raw.sqlite").path)
    raw.insert(items)
    let fresh = try Store.open("sqlite:" + check.appendingPathComponent("check.sqlite").path, registry: registry)
    defer { fresh.close() }
    try fresh.write { tx in for item in items { try tx.insert(item) } }
    guard try fresh.fetch(sorted) == raw.fetchAllSorted() else { fatalError("Reservoir and raw SQLite disagree on the sorted records") }
    return figures
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

if ProcessInfo.processInfo.environment["BENCH_PROFILE_BULK"] != nil {
    // Only the backend's bulk insert, for a profiler.
    let directory = scratchDirectory()
    let store = try Store.open("sqlite:" + directory.appendingPathComponent("profile.sqlite").path, registry: BackendRegistry([.sqlite]))
    let time = try measure { try store.write { tx in for item in items { try tx.insert(item) } } }
    store.close()
    try? FileManager.default.removeItem(at: directory)
    say("bulk insert \(format(time))")
    exit(0)
}
say("SQLite \(String(cString: sqlite3_libversion())), \(recordCount) records, best of \(repetitions)")
let raw = runRaw()
say("raw C API done")
let reservoir = try runReservoir()
let rows: [(String, Duration, Duration, Int, String)] = [
    ("bulk insert, one transaction", raw.bulkInsert, reservoir.bulkInsert, 1, "1.5×"),
    ("fetch all, sorted, decoded", raw.fetchAll, reservoir.fetchAll, 1, "1.5×"),
    ("point read (per read)", raw.pointReads, reservoir.pointReads, recordCount, "2×"),
    ("single-record commit (per commit)", raw.commits, reservoir.commits, commitCount, "1.5×"),
]
func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
say(pad("operation", 36) + pad("raw C API", 13) + pad("Reservoir", 13) + pad("ratio", 8) + "target")
for (name, rawTime, reservoirTime, count, target) in rows {
    say(pad(name, 36) + pad(format(rawTime, per: count), 13) + pad(format(reservoirTime, per: count), 13)
        + pad(ratio(reservoirTime, rawTime), 8) + "≤ " + target)
}
say("(checksum \(checksum))")
