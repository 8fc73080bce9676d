import BenchSupport
import Foundation
import Reservoir

/// The sizes and repetition counts of one run. The defaults are the table's; environment
/// variables scale a run down to try the harness quickly (BENCH_RECORDS=10000
/// BENCH_DISTINCT_RECORDS=100000 ...).
struct Settings {
    var records = 100_000
    var singleCommits = 1_000
    var updateRecords = 1_000
    /// Even, so that each of the basic rows' two side orders (``TableRun/basicRows()``) runs
    /// as often as the other.
    var repetitions = 4
    var subscriptionSizes = [10_000, 100_000]
    var subscriptionCommits = 11
    var distinctRecords = 1_000_000
    var distinctSubscriptions = BenchRecord.groups
    var distinctCommits = 5
    var capSeconds = 30
    var crossProcessCommits = 200
    var crossProcessGapMilliseconds = 5

    init(environment: [String: String]) {
        func value(_ name: String) -> Int? { environment[name].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } }
        records = value("BENCH_RECORDS") ?? records
        singleCommits = min(records, value("BENCH_COMMITS") ?? singleCommits)
        updateRecords = min(records, value("BENCH_UPDATES") ?? updateRecords)
        repetitions = value("BENCH_REPETITIONS") ?? repetitions
        if let size = value("BENCH_SUBSCRIPTION_RECORDS") { subscriptionSizes = [size / 10, size] }
        subscriptionCommits = value("BENCH_SUBSCRIPTION_COMMITS") ?? subscriptionCommits
        distinctRecords = value("BENCH_DISTINCT_RECORDS") ?? distinctRecords
        distinctSubscriptions = min(BenchRecord.groups, value("BENCH_DISTINCT_SUBSCRIPTIONS") ?? distinctSubscriptions)
        capSeconds = value("BENCH_CAP") ?? capSeconds
        crossProcessCommits = value("BENCH_CROSS_COMMITS") ?? crossProcessCommits
    }
}

/// Runs every row on every side and collects the table (on the main thread only).
final class TableRun {
    let settings: Settings
    let dataset: Dataset
    var table = MarkdownTable()

    init(settings: Settings) {
        self.settings = settings
        let largest = max(settings.records, settings.distinctRecords, settings.subscriptionSizes.max() ?? 0)
        dataset = Dataset(count: largest, lookupCount: settings.records)
    }

    static func count(_ number: Int) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.groupingSeparator = ","
        return formatter.string(from: NSNumber(value: number)) ?? "\(number)"
    }

    /// The basic rows: every side each repetition in turn, so load from other processes falls
    /// on all alike; the median of each. The Reservoir sides store `@Storable` records; each
    /// row is followed by a `Codable` line, the same workload on ``CodableBenchRecord``, whose
    /// ratios divide by the raw figures of the line above.
    ///
    /// The order of the sides is reversed every other repetition. A side's run is not
    /// independent of the run before it: on a 2-core machine, a PostgreSQL side that follows
    /// another PostgreSQL side does its round trips much faster than one that follows a
    /// side that leaves the server idle (raw libpq's group reads: 62 ms after the store's, 94
    /// ms after GRDB's, in one run). In one fixed order the side that runs second would
    /// always be favoured; with both orders each side follows each neighbour as often.
    func basicRows() throws {
        var sides: [any BenchSide] = [try ReservoirSide(.memory), try ReservoirSide(.sqlite), RawSQLiteSide(),
                                      try ReservoirSide(.lmdb), RawLMDBSide()]
        var codableSides: [any BenchSide] = [try ReservoirSide(.memory, .codable), try ReservoirSide(.sqlite, .codable),
                                             try ReservoirSide(.lmdb, .codable)]
        if BenchPostgres.shared.isAvailable {
            sides += [try ReservoirSide(.postgres), RawLibpqSide()]
            codableSides.append(try ReservoirSide(.postgres, .codable))
        }
        sides.append(GRDBSide())
        defer { (sides + codableSides).forEach { $0.close() } }
        let records = dataset.records.prefix(settings.records)
        for side in sides + codableSides { (side as? ReservoirSide)?.prepare(records) }
        // Every side with whether it stores `Codable` records, in the forward order.
        let forward = sides.map { ($0, false) } + codableSides.map { ($0, true) }
        var samples: [String: [TableColumn: [Duration]]] = [:]
        var codableSamples: [String: [TableColumn: [Duration]]] = [:]
        var order: [String] = []
        // `setup` runs before each timed `body`, untimed.
        func run(_ row: String, setup: (any BenchSide) throws -> Void = { _ in }, _ body: (any BenchSide, Int) throws -> Void) throws {
            order.append(row)
            for repetition in 0..<settings.repetitions {
                for (side, codable) in repetition.isMultiple(of: 2) ? forward : forward.reversed() {
                    try setup(side)
                    let sample = try Timing.measure { try body(side, repetition) }
                    if codable {
                        codableSamples[row, default: [:]][side.column, default: []].append(sample)
                    } else {
                        samples[row, default: [:]][side.column, default: []].append(sample)
                    }
                }
            }
            ProgressLog.note("\(row): done")
        }
        let n = Self.count(settings.records)
        // A fresh database and its empty table, untimed: the row times the load.
        try run("bulk insert \(n) records, one transaction", setup: { try $0.reset() }) { side, _ in
            try side.insert(records)
        }
        var reference: [Int]?
        try run("fetch all \(n) sorted by two fields (rank, name)") { side, _ in
            let ids = try side.fetchSorted()
            if let reference, ids != reference { throw BenchError("\(side.column.title)'s sorted fetch disagrees with \(TableColumn.memory.title)'s") }
            if ids.count != settings.records { throw BenchError("\(side.column.title) fetched \(ids.count) of \(settings.records) records") }
            reference = ids
        }
        var checksum: Int?
        try run("\(n) point reads by id") { side, _ in
            let sum = try side.pointReads(dataset.lookupOrder)
            if let checksum, sum != checksum { throw BenchError("\(side.column.title)'s point reads disagree with the other sides'") }
            checksum = sum
        }
        var groupSum: Int?
        let groups = dataset.groupOrder
        try run("\(Self.count(groups.count)) reads of \(BenchRecord.groupSize) records by an indexed field (group == g)") { side, _ in
            let sum = try side.groupReads(groups)
            if let groupSum, sum != groupSum { throw BenchError("\(side.column.title)'s group reads disagree with the other sides'") }
            groupSum = sum
        }
        // Each repetition writes new values, so no side can skip a write as a no-op; made before any timing.
        let single = dataset.singleCommitRounds(settings)
        try run("\(Self.count(settings.singleCommits)) single-record commits") { side, repetition in
            try side.commitEach(single[repetition])
        }
        let many = dataset.updateRounds(settings, first: 100)
        try run("update \(Self.count(settings.updateRecords)) records, one transaction") { side, repetition in
            try side.updateAll(many[repetition])
        }
        for row in order {
            let cells = (samples[row] ?? [:]).mapValues { Cell.time(Timing.median($0)) }
            table.add(row, cells)
            table.add("… the same, `Codable` records", (codableSamples[row] ?? [:]).mapValues { Cell.time(Timing.median($0)) }, engines: cells)
        }
    }

    /// The records the subscription rows commit: `count` ids among the first `records`
    /// in groups below `groups`, each changed so it moves in the sorted results.
    func commitRecords(_ count: Int, records: Int, groups: Int, round: Int) -> [BenchRecord] {
        (0..<count).map { index in
            let group = (index * 37) % groups
            let id = group * BenchRecord.groupSize + 1 + (index * 7919 + round) % BenchRecord.groupSize
            return dataset.changed(max(1, min(id, records)), round: 1_000 + round * 100 + index)
        }
    }

    /// Another process's commit -> live subscription updated, SQLite and LMDB.
    func crossProcessRow() throws {
        var cells: [TableColumn: Cell] = [.memory: .text("n/a (one process)"), .grdb: .text("n/a (does not observe other processes)"),
                                          .postgres: .text("not measured")]
        for (column, scheme) in [(TableColumn.sqlite, "sqlite"), (.lmdb, "lmdb")] {
            cells[column] = try CrossProcess.measure(scheme: scheme, commits: settings.crossProcessCommits,
                                                     gapMilliseconds: settings.crossProcessGapMilliseconds)
            ProgressLog.note("cross-process: \(column.title) done")
        }
        table.add("cross-process commit → subscription updated (\(settings.crossProcessCommits) commits \(settings.crossProcessGapMilliseconds) ms apart)", cells)
    }
}
