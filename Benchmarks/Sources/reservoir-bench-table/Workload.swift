import Foundation
import Reservoir
import ReservoirMacros

/// The record every side stores: the same fields, the same generated values. The Reservoir
/// columns store it as the README leads, with `@Storable` (generated row mapping); the
/// `Codable` lines store ``CodableBenchRecord``, the same shape through `Codable`.
/// `group` ((id - 1) / 100, indexed) puts 100 consecutive ids in each group, so the
/// distinct-subscriptions row has 10,000 requests of 100 records each over 1,000,000 records
/// and the indexed-read row reads 100 records a group; names are unique, so the two-field sort
/// (rank, name) has one answer that every side must agree on.
@Storable("items")
struct BenchRecord {
    var id: Int
    var name: String
    var score: Double
    var rank: Int
    @Indexed var group: Int

    /// The distinct groups at 1,000,000 records, so the distinct-subscriptions row has one
    /// request per group.
    static let groups = 10_000
    /// The records of each group.
    static let groupSize = 100

    static func group(of id: Int) -> Int { (id - 1) / groupSize }
}

/// ``BenchRecord`` stored through `Codable` (a hand-written schema, no generated mapping):
/// the `Codable` lines of the table.
struct CodableBenchRecord: Storable {
    var id: Int
    var name: String
    var score: Double
    var rank: Int
    var group: Int

    static let schema = Schema<CodableBenchRecord>("items", fields: [
        .field(\.name), .field(\.score), .field(\.rank), .field(\.group, indexed: true),
    ])
}

/// What the Reservoir side needs of a record type, so one side runs either.
protocol BenchStorable: Storable where ID == Int {
    init(_ record: BenchRecord)
    var rank: Int { get }
    /// Every record sorted by (rank, name).
    static var sorted: FetchRequest<Self> { get }
    /// One group's records, in id order.
    static func inGroup(_ group: Int) -> FetchRequest<Self>
}

extension BenchRecord: BenchStorable {
    init(_ record: BenchRecord) { self = record }
    static let sorted = FetchRequest<BenchRecord>(sortBy: [.ascending(\.rank), .ascending(\.name)])
    static func inGroup(_ group: Int) -> FetchRequest<BenchRecord> { FetchRequest(where: \.group == group) }
}

extension CodableBenchRecord: BenchStorable {
    init(_ record: BenchRecord) {
        (id, name, score, rank, group) = (record.id, record.name, record.score, record.rank, record.group)
    }
    static let sorted = FetchRequest<CodableBenchRecord>(sortBy: [.ascending(\.rank), .ascending(\.name)])
    static func inGroup(_ group: Int) -> FetchRequest<CodableBenchRecord> { FetchRequest(where: \.group == group) }
}

/// What a benchmark run failed on, said in words (a benchmark on scratch files).
/// The generated records and the order the point reads and commits visit them in, made once
/// per run with a fixed seed, so every side and every run sees the same data.
final class Dataset: Sendable {
    let records: [BenchRecord]
    /// A shuffle of the first `lookupCount` ids: point reads and commits visit them in this order.
    let lookupOrder: [Int]
    /// A shuffle of the groups of the first `lookupCount` ids: the indexed reads visit them in this order.
    let groupOrder: [Int]

    init(count: Int, lookupCount: Int) {
        var state: UInt64 = 0x1234_5678
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        records = (1...count).map { id in
            BenchRecord(id: id, name: "item-\(String(next() % 1_000_000, radix: 16))-\(id)", score: Double(next() % 10_000) / 7,
                        rank: Int(next() % 1000), group: BenchRecord.group(of: id))
        }
        var order = Array(1...lookupCount)
        for index in stride(from: order.count - 1, to: 0, by: -1) {
            order.swapAt(index, Int(next() % UInt64(index + 1)))
        }
        lookupOrder = order
        var groups = Array(0..<max(1, lookupCount / BenchRecord.groupSize))
        for index in stride(from: groups.count - 1, to: 0, by: -1) {
            groups.swapAt(index, Int(next() % UInt64(index + 1)))
        }
        groupOrder = groups
    }

    /// The record a commit writes: the same id with a new rank and name, so it moves in the
    /// sorted results and no side can skip the write as a no-op.
    func changed(_ id: Int, round: Int) -> BenchRecord {
        var record = records[id - 1]
        record.rank = (record.rank + 1 + round) % 1000
        record.name += "-v\(round)"
        return record
    }

    /// For each repetition, the records the single-commit row writes, with new values each
    /// time, so no side can skip a write as a no-op.
    func singleCommitRounds(_ settings: Settings) -> [[BenchRecord]] {
        (0..<settings.repetitions).map { round in lookupOrder.prefix(settings.singleCommits).map { changed($0, round: round) } }
    }

    /// For each repetition, the records the one-transaction update writes, rounds numbered from `first`.
    func updateRounds(_ settings: Settings, first: Int) -> [[BenchRecord]] {
        (0..<settings.repetitions).map { round in lookupOrder.suffix(settings.updateRecords).map { changed($0, round: first + round) } }
    }
}

/// Wall-clock timing and medians.
enum Timing {
    static func measure(_ body: () throws -> Void) rethrows -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return clock.now - start
    }

    /// The middle sample, or the mean of the middle two of an even count.
    static func median(_ samples: [Duration]) -> Duration {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return .zero }
        let upper = sorted[sorted.count / 2]
        return sorted.count.isMultiple(of: 2) ? (sorted[sorted.count / 2 - 1] + upper) / 2 : upper
    }

    /// The sample at `fraction` of the sorted samples (0.99 is the p99).
    static func percentile(_ samples: [Duration], _ fraction: Double) -> Duration {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return .zero }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Waits, yielding the core, until `done` holds; false if `deadline` passed first.
    static func wait(until deadline: ContinuousClock.Instant, _ done: () -> Bool) -> Bool {
        var spins = 0
        while !done() {
            if ContinuousClock.now >= deadline { return false }
            spins += 1
            // Spin briefly for sub-millisecond deliveries, then sleep so a slow peer's
            // background work gets the core.
            if spins < 2_000 { sched_yield() } else { usleep(200) }
        }
        return true
    }
}

/// A count other threads add to (subscribers' deliveries).
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ amount: Int = 1) { lock.lock(); value += amount; lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return value }
}

/// Progress on stderr, with the time since the run started, so stdout carries only the table.
enum ProgressLog {
    static let start = ContinuousClock.now
    static func note(_ text: String) {
        let elapsed = Timing.seconds(ContinuousClock.now - start)
        FileHandle.standardError.write(Data(String(format: "[%6.1f s] %@\n", elapsed, text).utf8))
    }
}

/// A scratch directory under the system's temporary directory, removed by the caller.
func scratchDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("reservoir-bench-table-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
