import BenchSupport
import Foundation
import Reservoir
import ReservoirLMDB
import ReservoirPostgres
import ReservoirSQLite

// Catch-up from a history token (issue #32): a store whose change log holds 1,000,000 entries
// (record changes) is read back with `store.history(after:limit:)` from the token taken before
// them, beside the same (sequence, id) pairs read with each engine's raw C API from a minimal
// table of their own; and the bytes each retained change set costs on disk. Two shapes: one
// record updated per change set (1,000,000 change sets), ten per change set (100,000).
//
//     cd Benchmarks && ../scripts/with-postgres swift run -c release history-catchup
//
// BENCH_HISTORY_ENTRIES scales the entries, BENCH_HISTORY_BACKENDS=sqlite,lmdb,postgres
// chooses backends (postgres needs RESERVOIR_BENCH_POSTGRES or RESERVOIR_TEST_POSTGRES),
// BENCH_HISTORY_SHAPES=1,10 the records per change set. Reads are the best of 3, wall time.

struct Counter: Storable {
    var id: Int
    var value: Int
    static let schema = Schema<Counter>("counters", fields: [.field(\.value)])
}

let environment = ProcessInfo.processInfo.environment
let entries = environment["BENCH_HISTORY_ENTRIES"].flatMap { Int($0) } ?? 1_000_000
let records = 10_000
let shapes = (environment["BENCH_HISTORY_SHAPES"] ?? "1,10").split(separator: ",").compactMap { Int($0) }
let postgresURL = environment["RESERVOIR_BENCH_POSTGRES"] ?? environment["RESERVOIR_TEST_POSTGRES"]
let backends = (environment["BENCH_HISTORY_BACKENDS"] ?? "sqlite,lmdb,postgres").split(separator: ",").map(String.init)
    .filter { $0 != "postgres" || postgresURL != nil }
let rounds = 3

func wallTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func processCPUTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Best of `rounds` runs of `body` (wall and process CPU seconds of the best), and its result.
func best<R>(_ body: () throws -> R) throws -> (wall: Double, cpu: Double, result: R) {
    var outcome: (wall: Double, cpu: Double, result: R)?
    for _ in 0..<rounds {
        let (wall, cpu) = (wallTime(), processCPUTime())
        let result = try body()
        let took = (wall: wallTime() - wall, cpu: processCPUTime() - cpu, result: result)
        if outcome == nil || took.wall < outcome?.wall ?? .infinity { outcome = took }
    }
    guard let outcome else { throw BenchError("no rounds") }
    return outcome
}

/// Where one backend's stores of this run live.
struct Place {
    let backend: String
    let directory: String
    let schema: String

    var configuration: String {
        switch backend {
        case "sqlite": "sqlite:\(directory)/store.sqlite?durability=normal&retention=0"
        case "lmdb": "lmdb:\(directory)/store?durability=none&retention=0&mapsize=4GiB"
        default: (postgresURL ?? "") + ((postgresURL ?? "").contains("?") ? "&" : "?") + "schema=\(schema)&retention=0"
        }
    }
}

func format(_ value: Double) -> String {
    let rounded = Int(value.rounded())
    var digits = String(rounded)
    var grouped = ""
    while digits.count > 3 {
        grouped = "," + digits.suffix(3) + grouped
        digits = String(digits.dropLast(3))
    }
    return digits + grouped
}

/// One row per backend and shape.
func runBenchmark() throws {
    print("History catch-up, \(format(Double(entries))) change-log entries (record changes) over \(format(Double(records))) records; reads best of \(rounds), wall time")
    print("| backend | records per change set | change sets | fill (commits/s) | catch-up, history(after:limit: 1000) | raw C API, same (sequence, id) pairs | ratio | log bytes per change set |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for backend in backends {
        for shape in shapes {
            let changeSets = entries / shape
            let directory = FileManager.default.temporaryDirectory.path + "/reservoir-history-bench-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let place = Place(backend: backend, directory: directory, schema: "history_bench_\(getpid())_\(shape)")
            defer { if backend == "postgres", let postgresURL { RawPostgres.drop(schema: place.schema, url: postgresURL) } }
            let registry = BackendRegistry([.sqlite, .lmdb, .postgres])

            // Fill: the records in one commit, then the change sets, each its own commit.
            let start: HistoryToken
            let fillStart = wallTime()
            do {
                let store = try Store.open(place.configuration, registry: registry)
                defer { store.close() }
                try store.write { tx in for id in 0..<records { try tx.insert(Counter(id: id, value: 0)) } }
                start = try store.currentHistoryToken
                for k in 0..<changeSets {
                    try store.write { tx in
                        for j in 0..<shape { try tx.update(Counter(id: (k * shape + j) % records, value: k + 1)) }
                    }
                }
            }
            let fillRate = Double(changeSets) / (wallTime() - fillStart)
            FileHandle.standardError.write(Data("\(backend), \(shape) a change set: filled at \(format(fillRate)) commits/s\n".utf8))

            // Catch-up, from a store opened afresh.
            let store = try Store.open(place.configuration, registry: registry)
            let ours = try best { () -> Int in
                var token = start
                var read = 0
                var checksum = 0
                while true {
                    let batch = try store.history(after: token, limit: 1000)
                    guard let last = batch.last else { break }
                    for changeSet in batch {
                        for change in changeSet.changes { if case let .integer(id) = change.id { checksum &+= Int(id) } }
                        read += changeSet.changes.count
                    }
                    token = last.token
                }
                guard read == entries / shape * shape else { throw BenchError("\(backend): read \(read) entries, expected \(entries / shape * shape)") }
                return checksum
            }
            store.close()

            // The log's bytes on disk, per retained change set.
            let bytes: Int
            switch backend {
            case "sqlite": bytes = try RawSQLite.logBytes(path: "\(directory)/store.sqlite")
            case "lmdb": bytes = try RawLMDB.logBytes(path: "\(directory)/store")
            default: bytes = try RawPostgres.logBytes(schema: place.schema, url: postgresURL ?? "")
            }

            // The raw side: the same (sequence, id) pairs, one row each, read from the first.
            let pairs = (0..<(changeSets * shape)).lazy.map { entry in (sequence: start.sequence + 1 + UInt64(entry / shape), id: entry % records) }
            let raw: (wall: Double, cpu: Double, result: Int)
            switch backend {
            case "sqlite":
                let side = try RawSQLite(path: "\(directory)/raw.sqlite", pairs: pairs)
                raw = try best { try side.read() }
            case "lmdb":
                let side = try RawLMDB(path: "\(directory)/raw", pairs: pairs)
                raw = try best { try side.read() }
            default:
                let side = try RawPostgres(url: postgresURL ?? "", schema: place.schema, pairs: changeSets * shape, shape: shape, records: records,
                                           firstSequence: start.sequence + 1)
                raw = try best { try side.read() }
            }
            guard raw.result == ours.result else { throw BenchError("\(backend): the raw side's ids (checksum \(raw.result)) differ from the history's (\(ours.result))") }

            let read = Double(changeSets * shape)
            print("| \(backend) | \(shape) | \(format(Double(changeSets))) | \(format(fillRate)) "
                + "| \(String(format: "%.2f", ours.wall)) s, \(format(read / ours.wall)) entries/s (CPU \(String(format: "%.2f", ours.cpu)) s) "
                + "| \(String(format: "%.3f", raw.wall)) s, \(format(read / raw.wall)) entries/s "
                + "| \(String(format: "%.1fx", ours.wall / raw.wall)) | \(String(format: "%.1f", Double(bytes) / Double(changeSets))) |")
        }
    }
}

do {
    try runBenchmark()
} catch {
    FileHandle.standardError.write(Data("history-catchup: \(error)\n".utf8))
    exit(1)
}
