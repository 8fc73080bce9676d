import BenchSupport
import Foundation

/// `BENCH_PROFILE=WORKLOAD:SIDE` runs one workload on one side alone, for a profiler or
/// callgrind, after an untimed bulk insert (itself the workload `insert`). WORKLOAD: insert,
/// fetch, point, group, commits, update; SIDE: memory, sqlite, lmdb, postgres (add `-codable`
/// for `Codable` records), raw-sqlite, raw-lmdb, raw-libpq, grdb; and `raw-sqlite-array`,
/// `raw-lmdb-array`, `raw-libpq-array`, the raw sides with each group read's records kept in an
/// array as a store's fetch returns them (``GroupSink``). The workload runs
/// BENCH_REPETITIONS times (default 3) and prints its median. With callgrind, count the
/// workload's own instructions with the inclusive count of the side's `pointReads` (`callgrind_annotate --inclusive=yes`).
/// `BENCH_PROFILE=decode:KIND` times decoding alone (``DecodeFloor``): `floor`, `rowdecoder`, `storable`;
/// `BENCH_PROFILE=encode:KIND` encoding alone (``EncodeFloor``): `floor`, `rowencoder`, `storable`.
enum Profile {
    static func side(_ name: String) throws -> any BenchSide {
        switch name {
        case "memory": return try ReservoirSide(.memory)
        case "sqlite": return try ReservoirSide(.sqlite)
        case "lmdb": return try ReservoirSide(.lmdb)
        case "postgres": return try ReservoirSide(.postgres)
        case "memory-codable": return try ReservoirSide(.memory, .codable)
        case "sqlite-codable": return try ReservoirSide(.sqlite, .codable)
        case "lmdb-codable": return try ReservoirSide(.lmdb, .codable)
        case "postgres-codable": return try ReservoirSide(.postgres, .codable)
        case "raw-sqlite": return RawSQLiteSide()
        case "raw-lmdb": return RawLMDBSide()
        case "raw-libpq": return RawLibpqSide()
        case "raw-sqlite-array":
            let side = RawSQLiteSide()
            side.collectsGroups = true
            return side
        case "raw-lmdb-array":
            let side = RawLMDBSide()
            side.collectsGroups = true
            return side
        case "raw-libpq-array":
            let side = RawLibpqSide()
            side.collectsGroups = true
            return side
        case "grdb": return GRDBSide()
        default: throw BenchError("BENCH_PROFILE: unknown side \(name)")
        }
    }

    static func run(_ spec: String, settings: Settings, dataset: Dataset) throws {
        let parts = spec.split(separator: ":").map(String.init)
        guard parts.count == 2 else { throw BenchError("BENCH_PROFILE=WORKLOAD:SIDE, not \(spec)") }
        if parts[0] == "decode" || parts[0] == "encode" {
            let records = dataset.records.prefix(settings.records)
            let code = parts[0] == "decode" ? try DecodeFloor.loop(parts[1], records: records) : try EncodeFloor.loop(parts[1], records: records)
            var samples: [Duration] = []
            var checksum = 0
            for _ in 0..<settings.repetitions {
                samples.append(try Timing.measure { checksum = try code() })
            }
            print("\(spec): median \(Cell.format(Timing.median(samples))) of \(samples.count) for \(records.count) records (checksum \(checksum))")
            return
        }
        // SIDE may name several sides, comma-separated: each repetition runs them in turn, in
        // that order, as the table does (for the effect one side's run has on the next).
        let sides = try parts[1].split(separator: ",").map { try side(String($0)) }
        defer { sides.forEach { $0.close() } }
        let records = dataset.records.prefix(settings.records)
        // New values each repetition, as in the table: a Reservoir side skips a write that changes nothing.
        let single = dataset.singleCommitRounds(settings)
        let many = dataset.updateRounds(settings, first: 200)
        for side in sides {
            (side as? ReservoirSide)?.prepare(records)
            if parts[0] != "insert" {
                try side.reset()
                try side.insert(records)
            }
        }
        var samples = [[Duration]](repeating: [], count: sides.count)
        for repetition in 0..<settings.repetitions {
            for (index, side) in sides.enumerated() {
                switch parts[0] {
                case "insert":
                    try side.reset()
                    samples[index].append(try Timing.measure { try side.insert(records) })
                case "fetch": samples[index].append(try Timing.measure { _ = try side.fetchSorted() })
                case "point": samples[index].append(try Timing.measure { _ = try side.pointReads(dataset.lookupOrder) })
                case "group": samples[index].append(try Timing.measure { _ = try side.groupReads(dataset.groupOrder) })
                case "commits": samples[index].append(try Timing.measure { try side.commitEach(single[repetition]) })
                case "update": samples[index].append(try Timing.measure { try side.updateAll(many[repetition]) })
                default: throw BenchError("BENCH_PROFILE: unknown workload \(parts[0])")
                }
            }
        }
        for (index, side) in sides.enumerated() {
            let name = sides.count == 1 ? spec : "\(parts[0]):\(side.column.title)"
            print("\(name): median \(Cell.format(Timing.median(samples[index]))) of \(samples[index].count)")
            if ProcessInfo.processInfo.environment["BENCH_PROFILE_SAMPLES"] != nil {
                print("  each: " + samples[index].map { Cell.format($0) }.joined(separator: ", "))
            }
        }
    }
}
