import BenchSupport
import Foundation

// Migrating 1,000,000 records (issue #33): one entity, `bench_notes(id, title, priority)`, and one
// schema version of three steps: `title` renamed to `name`, `priority` changed from an integer to
// text (its decimal digits), and an index on `name`. Reservoir runs it through
// `Store.open(url, migrations:)` on SQLite, LMDB and PostgreSQL; beside it, the same migration
// written by hand: SQL through the raw C API (SQLite) and raw libpq (PostgreSQL), GRDB's
// `DatabaseMigrator` on SQLite, and a raw LMDB C-API rewrite of the rows with an index database.
//
//     cd Benchmarks && ../scripts/with-postgres swift run -c release migration-bench [records]
//
// Every side runs at `records / 10` and `records` (1,000,000 by default), so "memory flat in the
// number of records" can be judged. Each migration runs in a child process of its own (this
// executable started with `--migrate`), after another child seeded the store (`--seed`), so the
// peak memory (`ru_maxrss` of that child, from `wait4`) is the migration's alone; a third child
// (`--verify`) checks the result. BENCH_LMDB_MAPSIZE sets Reservoir's LMDB map (4GiB by default,
// so it never fills). BENCH_MIGRATION_SIDES=reservoir-sqlite,raw-sqlite,... chooses
// sides (all by default; the PostgreSQL ones need RESERVOIR_TEST_POSTGRES or
// RESERVOIR_BENCH_POSTGRES).

let environment = ProcessInfo.processInfo.environment
let postgresURL = environment["RESERVOIR_BENCH_POSTGRES"] ?? environment["RESERVOIR_TEST_POSTGRES"]
/// Reservoir's LMDB map size, for seeding and migrating alike: BENCH_LMDB_MAPSIZE=64MiB (the
/// library's default) makes the map fill and grow while the store is seeded and migrated.
let lmdbMapSize = environment["BENCH_LMDB_MAPSIZE"] ?? "4GiB"

/// One way of running the migration, on one engine.
struct Side: Sendable {
    let name: String
    let engine: String
    let label: String
    let seed: @Sendable (Place, Int) throws -> Void
    let migrate: @Sendable (Place) throws -> Void
    let verify: @Sendable (Place, Int) throws -> Void
}

/// Where one side's store of one run lives.
struct Place: Sendable {
    let directory: String
    let schema: String

    /// The Reservoir configuration string for `engine`.
    func configuration(_ engine: String) -> String {
        switch engine {
        case "sqlite": "sqlite:\(directory)/store.sqlite?durability=normal"
        case "lmdb": "lmdb:\(directory)/store?durability=normal&mapsize=\(lmdbMapSize)"
        default: (postgresURL ?? "") + ((postgresURL ?? "").contains("?") ? "&" : "?") + "schema=\(schema)"
        }
    }
}

let sides: [Side] = [
    ReservoirSide.side(engine: "sqlite", label: "Reservoir"),
    RawSQLite.side,
    RawSQLite.rowLoopSide,
    GRDBSide.side,
    ReservoirSide.side(engine: "lmdb", label: "Reservoir"),
    RawLMDB.side,
    ReservoirSide.side(engine: "postgres", label: "Reservoir"),
    RawPostgres.side,
    RawPostgres.rowLoopSide,
]

/// The values every side seeds record `id` with, and what the migration makes of them.
enum Note {
    static func title(_ id: Int) -> String { "note \(id)" }
    static func priority(_ id: Int) -> Int { id % 7 }
    static func migratedPriority(_ id: Int) -> String { String(priority(id)) }
    /// The ids `--verify` reads back.
    static func samples(_ records: Int) -> [Int] { [0, records / 2, records - 1] }
}

func wallTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

// MARK: - Children

/// Starts this executable with `arguments` and waits for it; its wall time and peak resident set.
func runChild(_ arguments: [String]) throws -> (seconds: Double, maxRSSKiB: Int) {
    let executable = "/proc/self/exe"
    let argv = ([CommandLine.arguments[0]] + arguments).map { strdup($0) }
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let start = wallTime()
    let spawned = posix_spawn(&pid, executable, nil, nil, argv + [nil], environ)
    guard spawned == 0 else { throw BenchError("cannot start \(arguments): \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
        guard errno == EINTR else { throw BenchError("wait4: \(String(cString: strerror(errno)))") }
    }
    let seconds = wallTime() - start
    // WIFEXITED and WEXITSTATUS, which Swift does not import.
    guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else { throw BenchError("\(arguments.joined(separator: " ")) failed (wait status \(status))") }
    return (seconds, usage.ru_maxrss)
}

/// The child's own work: `--seed SIDE RECORDS DIR SCHEMA`, `--migrate SIDE RECORDS DIR SCHEMA`
/// (writes its time to DIR/seconds) or `--verify SIDE RECORDS DIR SCHEMA`.
func childMain(_ arguments: [String]) throws {
    guard arguments.count == 5, let side = sides.first(where: { $0.name == arguments[1] }), let records = Int(arguments[2]) else {
        throw BenchError("usage: migration-bench --seed|--migrate|--verify SIDE RECORDS DIRECTORY SCHEMA")
    }
    let place = Place(directory: arguments[3], schema: arguments[4])
    switch arguments[0] {
    case "--seed":
        try side.seed(place, records)
    case "--migrate":
        let start = wallTime()
        try side.migrate(place)
        let seconds = wallTime() - start
        try String(seconds).write(toFile: place.directory + "/seconds", atomically: true, encoding: .utf8)
    default:
        try side.verify(place, records)
    }
}

// MARK: - The table

struct Measured {
    var seconds: Double
    var maxRSSKiB: Int
}

func format(_ value: Double) -> String {
    var digits = String(Int(value.rounded()))
    var grouped = ""
    while digits.count > 3 {
        grouped = "," + digits.suffix(3) + grouped
        digits = String(digits.dropLast(3))
    }
    return digits + grouped
}

func measure(_ side: Side, records: Int) throws -> Measured {
    let directory = FileManager.default.temporaryDirectory.path + "/reservoir-migration-bench-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let schema = "migration_bench_\(getpid())_\(side.name.replacingOccurrences(of: "-", with: "_"))_\(records)"
    defer {
        try? FileManager.default.removeItem(atPath: directory)
        if side.engine == "postgres", let postgresURL { RawPostgres.drop(schema: schema, url: postgresURL) }
    }
    let arguments = [side.name, String(records), directory, schema]
    let seeded = try runChild(["--seed"] + arguments)
    FileHandle.standardError.write(Data("\(side.name), \(records) records: seeded in \(String(format: "%.1f", seeded.seconds)) s\n".utf8))
    let migrated = try runChild(["--migrate"] + arguments)
    guard let seconds = Double(try String(contentsOfFile: directory + "/seconds", encoding: .utf8)) else {
        throw BenchError("\(side.name): the migrating child left no time")
    }
    _ = try runChild(["--verify"] + arguments)
    FileHandle.standardError.write(Data("\(side.name), \(records) records: migrated in \(String(format: "%.2f", seconds)) s, peak \(migrated.maxRSSKiB / 1024) MiB, verified\n".utf8))
    return Measured(seconds: seconds, maxRSSKiB: migrated.maxRSSKiB)
}

func runBenchmark(records: Int) throws {
    let chosen = environment["BENCH_MIGRATION_SIDES"].map { $0.split(separator: ",").map(String.init) }
    let run = sides.filter { side in
        (chosen?.contains(side.name) ?? true) && (side.engine != "postgres" || postgresURL != nil)
    }
    let sizes = records >= 20 ? [records / 10, records] : [records]
    var results: [String: [Int: Measured]] = [:]
    for size in sizes {
        for side in run {
            results[side.name, default: [:]][size] = try measure(side, records: size)
        }
    }
    let header = sizes.map { "\(format(Double($0))) records: time, records/s, peak memory" }
    print("Migration of one entity (rename a field, integer to text with a transform, a new index), one version, one transaction; each migration in a child process of its own, peak memory its ru_maxrss.")
    print("")
    print("| engine | side | " + header.joined(separator: " | ") + " | vs hand-written SQL/C at \(format(Double(records))) |")
    print("| --- | --- | " + sizes.map { _ in "---:" }.joined(separator: " | ") + " | ---: |")
    for side in run {
        var cells: [String] = []
        for size in sizes {
            guard let measured = results[side.name]?[size] else { cells.append("–"); continue }
            cells.append("\(String(format: "%.2f", measured.seconds)) s, \(format(Double(size) / measured.seconds))/s, \(String(format: "%.1f", Double(measured.maxRSSKiB) / 1024)) MiB")
        }
        var ratio = "–"
        let baseline = "raw-" + side.engine
        if side.name != baseline, let ours = results[side.name]?[records], let raw = results[baseline]?[records] {
            ratio = String(format: "%.2f×", ours.seconds / raw.seconds)
        }
        print("| \(side.engine) | \(side.label) | " + cells.joined(separator: " | ") + " | \(ratio) |")
    }
}

do {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if let first = arguments.first, first.hasPrefix("--") {
        try childMain(arguments)
    } else {
        let records = arguments.first.flatMap { Int($0) } ?? 1_000_000
        guard records > 0 else { throw BenchError("the record count must be positive") }
        try runBenchmark(records: records)
    }
} catch {
    FileHandle.standardError.write(Data("migration-bench: \(error)\n".utf8))
    exit(1)
}
