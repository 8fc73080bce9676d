import Foundation
import OpenCombineShim
import Reservoir
import ReservoirLMDB
import ReservoirSQLite

/// The table's record as of 77dd28a: `Codable`, a hand-written schema, `group` indexed.
struct ProbeRecord: Storable, Equatable {
    var id: Int
    var name: String
    var score: Double
    var rank: Int
    var group: Int

    static let schema = Schema<ProbeRecord>("items", fields: [
        .field(\.name), .field(\.score), .field(\.rank), .field(\.group, indexed: true),
    ])
}

struct ProbeOptions {
    var backend: String
    var records: Int
    var subscriptions: Int
    var commits: Int
    var stores: Int
    var pauseMilliseconds: Int
    var spinOnly: Bool
}

struct ProbeError: Error, CustomStringConvertible {
    let description: String
}

/// CLOCK_MONOTONIC in nanoseconds, readable from any thread.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// What the subscribers received: how many values, the clock at the last, and how many
/// arrived on a thread other than the committing one.
final class Arrivals: @unchecked Sendable {
    private let lock = NSLock()
    private let committer = pthread_self()
    private var received = 0
    private var last: UInt64 = 0
    private var elsewhere = 0

    func add() {
        let now = monotonicNanoseconds()
        let other = pthread_equal(pthread_self(), committer) == 0
        lock.lock()
        received += 1
        last = now
        if other { elsewhere += 1 }
        lock.unlock()
    }

    var state: (count: Int, last: UInt64, elsewhere: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (received, last, elsewhere)
    }
}

/// One commit's times from the start of its `write`, in nanoseconds.
struct CommitSample {
    var write: UInt64
    var delivered: UInt64
    var seen: UInt64
    var beforeReturn: Bool
    var elsewhere: Bool
}

/// Runs the row on fresh stores, one after another, and prints the distributions.
final class Probe {
    let options: ProbeOptions
    let records: [ProbeRecord]
    let sorted = FetchRequest<ProbeRecord>(sortBy: [.ascending(\.rank), .ascending(\.name)])

    init(_ options: ProbeOptions) {
        self.options = options
        // The table's generator (Dataset at 77dd28a): the same first records at any size.
        var state: UInt64 = 0x1234_5678
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        records = (1...options.records).map { id in
            ProbeRecord(id: id, name: "item-\(String(next() % 1_000_000, radix: 16))-\(id)", score: Double(next() % 10_000) / 7,
                        rank: Int(next() % 1000), group: id % 10_000)
        }
    }

    /// The table's commit records (`commitRecords` at 77dd28a): distinct ids, each moved in the order.
    func commitRecord(_ index: Int, store: Int) -> ProbeRecord {
        let group = (index * 37) % 10_000
        let block = (index * 7919 + store) % max(1, options.records / 10_000)
        let id = max(1, min(group == 0 ? (block + 1) * 10_000 : block * 10_000 + group, options.records))
        var record = records[id - 1]
        let round = 1_000 + store * 100 + index
        record.rank = (record.rank + 1 + round) % 1000
        record.name += "-v\(round)"
        return record
    }

    func configuration(in directory: URL) -> String {
        switch options.backend {
        case "sqlite": return "sqlite:" + directory.appendingPathComponent("store.sqlite").path
        case "lmdb": return "lmdb:" + directory.appendingPathComponent("env").path + "?durability=none&mapsize=4GiB"
        default: return "memory:"
        }
    }

    /// The table's waiting loop (spin, then sleep 200 µs at a time), or spinning only.
    func wait(_ done: () -> Bool) {
        var spins = 0
        while !done() {
            spins += 1
            if options.spinOnly || spins < 2_000 { sched_yield() } else { usleep(200) }
        }
    }

    func run() throws {
        var samples: [CommitSample] = []
        for store in 0..<options.stores {
            samples += try runStore(store)
        }
        report(samples)
    }

    private func runStore(_ index: Int) throws -> [CommitSample] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("commit-notify-latency-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store.open(configuration(in: directory), registry: BackendRegistry([.sqlite, .lmdb]))
        defer { store.close() }
        try store.write { tx in for record in records { try tx.insert(record) } }
        let arrivals = Arrivals()
        var cancellables: [AnyCancellable] = []
        defer { cancellables.forEach { $0.cancel() } }
        for _ in 0..<options.subscriptions {
            cancellables.append(store.differencesPublisher(for: sorted)
                .sink(receiveCompletion: { _ in }, receiveValue: { _ in arrivals.add() }))
        }
        wait { arrivals.state.count >= options.subscriptions }
        if options.pauseMilliseconds > 0 { usleep(UInt32(options.pauseMilliseconds) * 1000) }
        var samples: [CommitSample] = []
        for commit in 0..<options.commits {
            let record = commitRecord(commit, store: index)
            let expected = arrivals.state.count + options.subscriptions
            let before = arrivals.state.elsewhere
            let start = monotonicNanoseconds()
            try store.write { try $0.update(record) }
            let returned = monotonicNanoseconds()
            let atReturn = arrivals.state.count >= expected
            wait { arrivals.state.count >= expected }
            let seen = monotonicNanoseconds()
            let state = arrivals.state
            guard state.count == expected else { throw ProbeError(description: "a commit notified \(state.count - expected + options.subscriptions)") }
            samples.append(CommitSample(write: returned - start, delivered: state.last - start, seen: seen - start,
                                        beforeReturn: atReturn, elsewhere: state.elsewhere > before))
        }
        return samples
    }

    private func report(_ samples: [CommitSample]) {
        func micro(_ value: UInt64) -> String { String(format: "%.1f", Double(value) / 1000) }
        func line(_ name: String, _ values: [UInt64]) -> String {
            let sorted = values.sorted()
            func at(_ fraction: Double) -> UInt64 { sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
            let mean = Double(values.reduce(0, +)) / Double(values.count) / 1000
            return "\(name): median \(micro(at(0.5))) µs, p10 \(micro(at(0.1))), p90 \(micro(at(0.9))), max \(micro(sorted.last ?? 0)), mean \(String(format: "%.1f", mean))"
        }
        print("\(options.backend), \(options.records) records, \(options.subscriptions) subscription(s), \(options.stores) stores × \(options.commits) commits, pause \(options.pauseMilliseconds) ms, wait \(options.spinOnly ? "spin" : "table")")
        print(line("  write returned", samples.map(\.write)))
        print(line("  delivered     ", samples.map(\.delivered)))
        print(line("  seen          ", samples.map(\.seen)))
        print("  delivered before write returned: \(samples.filter(\.beforeReturn).count) of \(samples.count); on another thread: \(samples.filter(\.elsewhere).count)")
        // The table's cell: the median of each store's commits; their spread over the stores.
        let perStore = stride(from: 0, to: samples.count, by: options.commits).map { start -> UInt64 in
            let seen = samples[start..<min(samples.count, start + options.commits)].map(\.seen).sorted()
            return seen[seen.count / 2]
        }
        print("  per store, the table's cell (median seen): " + perStore.map(micro).joined(separator: " "))
    }
}
