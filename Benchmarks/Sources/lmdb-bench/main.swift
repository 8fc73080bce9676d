import CLMDB
import Foundation
import Reservoir
import ReservoirLMDB
import ReservoirMacros

// Compares the LMDB backend with the raw LMDB C API on the same 100,000 records, in one run.
// Both sides decode into Swift values. Durability: MDB_NOSYNC on both (durability=none).

struct Item: Storable {
    var id: Int
    var name: String
    var score: Double
    var rank: Int
    static let schema = Schema<Item>("items", fields: [.field(\.id), .field(\.name), .field(\.score), .field(\.rank)])
}

struct IndexedItem: Storable {
    var id: Int
    var name: String
    var score: Double
    var rank: Int
    static let schema = Schema<IndexedItem>("indexed_items", fields: [.field(\.id), .field(\.name), .field(\.score), .field(\.rank, indexed: true)])
}

/// The same records declared `@RowMapped` (generated makeRow / init(row:)) instead of
/// mapped through Codable, stored as their own entity.
@RowMapped
struct MappedItem: Storable {
    var id: Int
    var name: String
    var score: Double
    var rank: Int
    static let schema = Schema<MappedItem>("mapped_items", fields: [.field(\.id), .field(\.name), .field(\.score), .field(\.rank)])

    init(_ item: Item) {
        (id, name, score, rank) = (item.id, item.name, item.score, item.rank)
    }
}

let count = 100_000
let commits = 1_000
let rounds = Int(ProcessInfo.processInfo.environment["ROUNDS"] ?? "5") ?? 5
var generator = SystemRandomNumberGenerator()
let items: [Item] = (0..<count).map { i in
    Item(id: i, name: "item \(i) \(String(repeating: "x", count: i % 17))", score: Double((i &* 7919) % 100_003) / 7, rank: i % 1000)
}
let mappedItems = items.map(MappedItem.init)
let lookups: [Int] = (0..<count).shuffled(using: &generator)

/// CPU time of this thread (user + system), so other processes competing for the
/// machine's cores do not inflate the figures; wall-clock time is printed beside it.
func threadCPUTime() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}


func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = threadCPUTime()
    try body()
    return threadCPUTime() - start
}

func temporaryDirectory(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.path + "/reservoir-bench-\(name)-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

// MARK: - Reservoir on LMDB

enum Ours {
    static func run() throws -> [String: Double] {
        let path = temporaryDirectory("ours")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let registry = BackendRegistry([.lmdb])
        let store = try Store.open("lmdb:\(path)/env?durability=none&mapsize=1GiB", registry: registry)
        defer { store.close() }
        var results: [String: Double] = [:]
        results["bulk"] = try seconds {
            try store.write { tx in for item in items { try tx.insert(item) } }
        }
        results["bulkMapped"] = try seconds {
            try store.write { tx in for item in mappedItems { try tx.insert(item) } }
        }
        // The backend SPI alone: rows already encoded, no change tracking.
        let backend = store.backend
        let entity = EntityDescription(name: "spi_items", idColumn: "id", fields: ["id", "name", "score", "rank"])
        let rows = try items.map { try RowEncoder().encode($0) }
        results["bulkSPI"] = try seconds {
            try backend.write { tx in
                for (item, row) in zip(items, rows) { try tx.put(entity, id: .integer(Int64(item.id)), row: row) }
            }
        }
        let indexed = items.map { IndexedItem(id: $0.id, name: $0.name, score: $0.score, rank: $0.rank) }
        results["bulkIndexed"] = try seconds {
            try store.write { tx in for item in indexed { try tx.insert(item) } }
        }
        var sorted: [Item] = []
        results["fetchAll"] = try seconds {
            sorted = try store.fetch(FetchRequest<Item>(sortBy: [.ascending(\.score)]))
        }
        precondition(sorted.count == count)
        var sortedMapped: [MappedItem] = []
        results["fetchAllMapped"] = try seconds {
            sortedMapped = try store.fetch(FetchRequest<MappedItem>(sortBy: [.ascending(\.score)]))
        }
        precondition(sortedMapped.map(\.id) == sorted.map(\.id))
        let byScore = try Query(entity: Item.schema.entity, sort: [SortTerm(column: "score")])
        // Kept past the timing, as the raw side keeps its array: neither side times freeing.
        var fetched: [Row] = []
        results["fetchAllSPI"] = try seconds {
            fetched = try backend.read { try $0.fetch(byScore) }
        }
        precondition(fetched.count == count)
        var checksum = 0
        results["point"] = try seconds {
            try store.read { snapshot in
                for id in lookups {
                    guard let item = try snapshot.get(Item.self, id: id) else { fatalError("missing \(id)") }
                    checksum &+= item.rank
                }
            }
        }
        precondition(checksum > 0)
        results["pointMapped"] = try seconds {
            try store.read { snapshot in
                for id in lookups {
                    guard let item = try snapshot.get(MappedItem.self, id: id) else { fatalError("missing \(id)") }
                    checksum &+= item.rank
                }
            }
        }
        results["pointSPI"] = try seconds {
            try backend.read { reader in
                for id in lookups {
                    guard let row = try reader.row("items", id: .integer(Int64(id))) else { fatalError("missing \(id)") }
                    if case let .integer(rank) = row.value("rank") { checksum &+= Int(rank) }
                }
            }
        }
        results["commits"] = try seconds {
            for i in 0..<commits {
                try store.write { tx in try tx.insert(Item(id: count + i, name: "single \(i)", score: 1, rank: 1)) }
            }
        }
        results["commitsMapped"] = try seconds {
            for i in 0..<commits {
                try store.write { tx in try tx.insert(MappedItem(Item(id: count + i, name: "single \(i)", score: 1, rank: 1))) }
            }
        }
        // What the core asks of the backend per commit, rows encoded beforehand: the last
        // sequence, the insert, the change-log record.
        let singles = try (0..<commits).map { i in
            let item = Item(id: 2 * count + i, name: "single \(i)", score: 1, rank: 1)
            let id = Value.integer(Int64(item.id))
            let row = try RowEncoder().encode(item)
            return (id, row, [EntityChanges(entity: "spi_items", inserted: [RowChange(id: id, row: row)])])
        }
        results["commitsSPI"] = try seconds {
            for (id, row, changes) in singles {
                try backend.write { tx in
                    let sequence = try tx.lastSequence() + 1
                    guard try tx.insert(entity, id: id, row: row) else { fatalError("id \(id) exists") }
                    try tx.record(ChangeSet(sequence: sequence, entities: changes))
                }
            }
        }
        // The commit signal's cost to the committing process: its own commits wake its own
        // probe too (on another thread, so thread CPU time cannot see it). Process CPU time and
        // wall time of 1,000 commits, each store in a fresh environment, with and without it.
        // Alternating, twice each, keeping each side's best: the first store opened pays
        // one-time costs (page faults of a new map, first-use metadata) the second does not.
        for (round, (name, signal)) in [("Signal", true), ("NoSignal", false), ("Signal", true), ("NoSignal", false)].enumerated() {
            let configuration = try StoreConfiguration("lmdb:\(path)/\(name)\(round)?durability=none&mapsize=1GiB")
            let other = try Store(backend: registry.makeBackend(configuration), configuration: configuration, usesCommitSignal: signal)
            defer { other.close() }
            let (cpu, wall) = (processCPUTime(), wallTime())
            for i in 0..<commits {
                try other.write { tx in try tx.insert(Item(id: i, name: "single \(i)", score: 1, rank: 1)) }
            }
            results["commitsCPU" + name] = min(results["commitsCPU" + name] ?? .infinity, processCPUTime() - cpu)
            results["commitsWall" + name] = min(results["commitsWall" + name] ?? .infinity, wallTime() - wall)
        }
        return results
    }
}

func processCPUTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func wallTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

// MARK: - Profiling aid: PROFILE=fetch|point|commits|spicommits|bulk|mappedbulk|codablebulk|mappedfetch|codablefetch|rawbulk|rawfetch runs one operation in a loop, for perf.

if ProcessInfo.processInfo.environment["PROFILE"] == "rawbulk" {
    // The raw side's bulk insert alone, to compare LMDB's own work per put with ours.
    for _ in 0..<(Int(ProcessInfo.processInfo.environment["PROFILE_ROUNDS"] ?? "20") ?? 20) {
        print("rawbulk", Raw.run()["bulk"] ?? 0)
    }
    exit(0)
}
if ProcessInfo.processInfo.environment["PROFILE"] == "rawfetch" {
    // The raw side's fetch-all alone, for callgrind beside PROFILE=mappedfetch.
    let path = temporaryDirectory("raw-profile")
    defer { try? FileManager.default.removeItem(atPath: path) }
    let (env, dbi) = Raw.open(path)
    var buffer: [UInt8] = []
    Raw.bulkInsert(env, dbi, &buffer)
    for _ in 0..<(Int(ProcessInfo.processInfo.environment["PROFILE_ROUNDS"] ?? "20") ?? 20) {
        let t = seconds { _ = Raw.fetchAll(env, dbi) }
        print("rawfetch", t)
    }
    mdb_env_close(env)
    exit(0)
}
if let mode = ProcessInfo.processInfo.environment["PROFILE"] {
    let path = temporaryDirectory("profile")
    defer { try? FileManager.default.removeItem(atPath: path) }
    let profiled = try StoreConfiguration("lmdb:\(path)/env?durability=none&mapsize=1GiB")
    // SIGNAL=0 leaves the commit signal off, to compare its cost with `perf stat`.
    let store = try Store(backend: BackendRegistry([.lmdb]).makeBackend(profiled), configuration: profiled,
                          usesCommitSignal: ProcessInfo.processInfo.environment["SIGNAL"] != "0")
    if mode == "fetch" || mode == "point" || mode == "codablefetch" {
        try store.write { tx in for item in items { try tx.insert(item) } }
    }
    if mode == "mappedfetch" {
        try store.write { tx in for item in mappedItems { try tx.insert(item) } }
    }
    let byScore = try Query(entity: Item.schema.entity, sort: [SortTerm(column: "score")])
    // The last fetch's result, kept past the timing as the full benchmark keeps it.
    var kept: [MappedItem] = []
    let rows = try items.map { try RowEncoder().encode($0) }
    for round in 0..<(Int(ProcessInfo.processInfo.environment["PROFILE_ROUNDS"] ?? "20") ?? 20) {
        let t = try seconds {
            if mode == "commits" {
                for i in 0..<commits {
                    try store.write { tx in try tx.insert(Item(id: count + round * commits + i, name: "single \(i)", score: 1, rank: 1)) }
                }
            } else if mode == "spicommits" || mode == "nolog" {
                let entity = Item.schema.entity
                let lastSequence = try store.backend.read { try $0.lastSequence() }
                let prepared = try (0..<commits).map { i in
                    let item = Item(id: count + round * commits + i, name: "single \(i)", score: 1, rank: 1)
                    return (item, try RowEncoder().encode(item))
                }
                for (item, row) in prepared {
                    try store.backend.write { tx in
                        try tx.put(entity, id: .integer(Int64(item.id)), row: row)
                        if mode == "spicommits" {
                            let sequence = try tx.lastSequence() + 1
                            try tx.record(ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "items", inserted: [RowChange(id: .integer(Int64(item.id)), row: row)])]))
                        }
                    }
                }
                _ = lastSequence
            } else if mode == "mappedbulk" {
                let fresh = try Store.open("lmdb:\(path)/mapped\(round)?durability=none&mapsize=1GiB", registry: BackendRegistry([.lmdb]))
                defer { fresh.close() }
                try fresh.write { tx in for item in mappedItems { try tx.insert(item) } }
            } else if mode == "codablebulk" {
                let fresh = try Store.open("lmdb:\(path)/codable\(round)?durability=none&mapsize=1GiB", registry: BackendRegistry([.lmdb]))
                defer { fresh.close() }
                try fresh.write { tx in for item in items { try tx.insert(item) } }
            } else if mode == "codablefetch" {
                _ = try store.fetch(FetchRequest<Item>(sortBy: [.ascending(\.score)]))
            } else if mode == "mappedfetch" {
                kept = try store.fetch(FetchRequest<MappedItem>(sortBy: [.ascending(\.score)]))
            } else if mode == "bulk" {
                let entity = EntityDescription(name: "spi_items_\(round)", idColumn: "id", fields: ["id", "name", "score", "rank"])
                try store.backend.write { tx in
                    for (item, row) in zip(items, rows) { try tx.put(entity, id: .integer(Int64(item.id)), row: row) }
                }
            } else if mode == "fetch" {
                _ = try store.backend.read { try $0.fetch(byScore) }
            } else {
                try store.backend.read { reader in for id in lookups { _ = try reader.row("items", id: .integer(Int64(id))) } }
            }
        }
        print(mode, t, kept.isEmpty ? "" : "(\(kept.count) records kept)")
        kept = []
    }
    exit(0)
}

// MARK: - Report

var raw: [String: Double] = [:]
var ours: [String: Double] = [:]
for round in 1...rounds {
    var r = Raw.run()
    r["namedCommits"] = Raw.runNamedCommits()
    r["bulkAppend"] = Raw.runAppendBulk()
    let o = try Ours.run()
    for (key, value) in r { raw[key] = min(raw[key] ?? .infinity, value) }
    for (key, value) in o { ours[key] = min(ours[key] ?? .infinity, value) }
    FileHandle.standardError.write(Data("round \(round) done\n".utf8))
}

func ms(_ s: Double) -> String { String(format: "%9.1f ms", s * 1000) }
func us(_ s: Double, per n: Int) -> String { String(format: "%7.2f µs", s / Double(n) * 1e6) }

print("LMDB backend vs raw LMDB C API, \(count) records, best of \(rounds) rounds, thread CPU time, MDB_NOSYNC both")
print("| operation | raw C API | Reservoir LMDB | ratio | target |")
print("| --- | ---: | ---: | ---: | ---: |")
@MainActor func line(_ name: String, _ key: String, _ oursKey: String, per n: Int? = nil, target: Double) {
    guard let r = raw[key], let o = ours[oursKey] else { return }
    let rs = n.map { "\(ms(r)) (\(us(r, per: $0)))" } ?? ms(r)
    let os = n.map { "\(ms(o)) (\(us(o, per: $0)))" } ?? ms(o)
    let ratio = o / r
    print("| \(name) | \(rs) | \(os) | \(String(format: "%.2fx", ratio)) \(ratio <= target ? "ok" : "MISS") | ≤ \(String(format: "%.0f", target))x |")
}
line("bulk insert, one transaction (Store.insert, Codable)", "bulk", "bulk", target: 2)
line("bulk insert, one transaction (Store.insert, @RowMapped)", "bulk", "bulkMapped", target: 2)
line("bulk insert, one transaction (backend SPI put of rows)", "bulk", "bulkSPI", target: 2)
line("fetch-all sorted by score (scan, decode, sort)", "fetchAll", "fetchAll", target: 3)
line("fetch-all sorted by score (Store.fetch, @RowMapped)", "fetchAll", "fetchAllMapped", target: 3)
line("fetch-all sorted by score (backend SPI rows)", "fetchAll", "fetchAllSPI", target: 3)
line("100,000 point reads (Snapshot.get, decode)", "point", "point", per: count, target: 3)
line("100,000 point reads (Snapshot.get, @RowMapped)", "point", "pointMapped", per: count, target: 3)
line("100,000 point reads (backend SPI row)", "point", "pointSPI", per: count, target: 3)
line("1,000 single-record commits, no sync", "commits", "commits", per: commits, target: 3)
line("1,000 single-record commits, no sync (@RowMapped)", "commits", "commitsMapped", per: commits, target: 3)
line("1,000 single-record commits, no sync (backend SPI insert and log record)", "commits", "commitsSPI", per: commits, target: 3)
if let named = raw["namedCommits"], let o = ours["commits"] {
    print("raw C API, 1,000 commits of a record plus a log record into two named databases: \(ms(named)) (\(us(named, per: commits))); Reservoir is \(String(format: "%.2fx", o / named)) that")
}
if let appended = raw["bulkAppend"], let mapped = ours["bulkMapped"], let spi = ours["bulkSPI"] {
    print("raw C API bulk insert with MDB_APPEND: \(ms(appended)); Reservoir is \(String(format: "%.2fx", mapped / appended)) that with @RowMapped records, \(String(format: "%.2fx", spi / appended)) through the SPI")
}
if let cpuOn = ours["commitsCPUSignal"], let cpuOff = ours["commitsCPUNoSignal"],
   let wallOn = ours["commitsWallSignal"], let wallOff = ours["commitsWallNoSignal"] {
    print("1,000 single-record commits, process CPU time: \(us(cpuOn, per: commits)) each with the commit signal, \(us(cpuOff, per: commits)) without (\(String(format: "%.2fx", cpuOn / cpuOff))); wall time \(us(wallOn, per: commits)) vs \(us(wallOff, per: commits)) (\(String(format: "%.2fx", wallOn / wallOff)))")
}
if let indexed = ours["bulkIndexed"], let plain = ours["bulk"] {
    print("bulk insert with one indexed field: \(ms(indexed)) (\(String(format: "%.2fx", indexed / plain)) the unindexed insert)")
}
