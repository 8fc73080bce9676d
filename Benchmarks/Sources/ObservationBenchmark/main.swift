import Foundation
import OpenCombineShim
import Reservoir

// Per-commit cost of live subscriptions: the time from the start of a one-record write
// until every subscriber has received its difference (delivery completes before `write`
// returns), for 1 and 100 subscriptions over 10,000 and 100,000 records, against a naive
// subscription that re-fetches and diffs with `difference(from:)` on every commit.

struct Task: Storable {
    var id: Int
    var title: String
    var priority: Int
    var done: Bool
    static let schema = Schema<Task>("tasks", fields: [.field(\.title), .field(\.priority, indexed: true), .field(\.done)])
}

let request = FetchRequest<Task>(where: \.done == false, sortBy: [.descending(\.priority), .ascending(\.title)])

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add() { lock.lock(); value += 1; lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return value }
}

func makeStore(records: Int) throws -> Store {
    let store = try Store.open("memory:")
    var random = SystemRandomNumberGenerator()
    try store.write { tx in
        for i in 0..<records {
            try tx.insert(Task(id: i, title: "task \(i)", priority: Int.random(in: 0..<1000, using: &random), done: false))
        }
    }
    return store
}

/// Median nanoseconds per commit for `commits` one-record updates, checking every
/// subscriber got one value per commit.
func measure(store: Store, records: Int, commits: Int, received: Counter, subscribers: Int) throws -> Double {
    var samples: [Double] = []
    var random = SystemRandomNumberGenerator()
    for commit in 0..<commits {
        let id = Int.random(in: 0..<records, using: &random)
        let before = received.count
        let start = DispatchTime.now().uptimeNanoseconds
        try store.write { tx in
            // A new title every time, so the row really changes (an identical row is a no-op write).
            try tx.update(Task(id: id, title: "task \(id) v\(commit)", priority: Int.random(in: 0..<1000, using: &random), done: false))
        }
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        guard received.count - before == subscribers else {
            throw ReservoirError(.backend, "expected \(subscribers) values for the commit, got \(received.count - before)")
        }
    }
    samples.sort()
    return samples[samples.count / 2]
}

func live(records: Int, subscribers: Int, commits: Int) throws -> Double {
    var clock = DispatchTime.now().uptimeNanoseconds
    func lap(_ what: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        note(String(format: "%@: %.2f s", what, Double(now - clock) / 1e9))
        clock = now
    }
    let store = try makeStore(records: records)
    lap("live \(records)/\(subscribers): filled the store")
    let received = Counter()
    var cancellables: [AnyCancellable] = []
    for _ in 0..<subscribers {
        cancellables.append(store.differencesPublisher(for: request).sink(receiveCompletion: { _ in }, receiveValue: { _ in received.add() }))
    }
    let initial = received.count
    guard initial == subscribers else { throw ReservoirError(.backend, "initial values: \(initial)") }
    lap("subscribed (one fetch each)")
    let result = try measure(store: store, records: records, commits: commits, received: received, subscribers: subscribers)
    cancellables.forEach { $0.cancel() }
    return result
}

func naive(records: Int, subscribers: Int, commits: Int) throws -> Double {
    let store = try makeStore(records: records)
    let received = Counter()
    var cancellables: [AnyCancellable] = []
    for _ in 0..<subscribers {
        let previous = Locked([Task]())
        previous.set(try store.fetch(request))
        cancellables.append(store.changeSets.sink { changeSet in
            guard changeSet.touches("tasks"), let now = try? store.fetch(request) else { return }
            let difference = now.difference(from: previous.get())
            previous.set(now)
            if !difference.isEmpty { received.add() }
        })
    }
    let result = try measure(store: store, records: records, commits: commits, received: received, subscribers: subscribers)
    cancellables.forEach { $0.cancel() }
    return result
}

final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func get() -> T { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ new: T) { lock.lock(); value = new; lock.unlock() }
}

func format(_ ns: Double) -> String {
    ns >= 1_000_000 ? String(format: "%9.2f ms", ns / 1_000_000) : String(format: "%9.1f µs", ns / 1_000)
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func note(_ text: String) { FileHandle.standardError.write(Data("  \(text)\n".utf8)) }

// `observation-benchmark profile RECORDS SUBSCRIBERS COMMITS` runs only the live case, for a profiler.
let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "profile", let records = Int(arguments[2]), let subscribers = Int(arguments[3]), let commits = Int(arguments[4]) {
    say("live \(records)/\(subscribers): \(format(try live(records: records, subscribers: subscribers, commits: commits))) per commit")
    exit(0)
}
// `distinct BACKEND RECORDS [COMMITS]`: routing, 100 vs 10,000 distinct subscriptions
// (`channel == c`); `ranges BACKEND RECORDS [COMMITS]`: the same with disjoint position ranges.
if arguments.count >= 4, arguments[1] == "distinct" || arguments[1] == "ranges", let records = Int(arguments[3]) {
    try runDistinct(backend: arguments[2], records: records, commits: arguments.count > 4 ? Int(arguments[4]) ?? 200 : 200, ranges: arguments[1] == "ranges")
    exit(0)
}
// `identical BACKEND RECORDS SUBSCRIBERS COMMITS`: sharing; also a profile mode for `/usr/bin/time -f %M`.
if arguments.count == 6, arguments[1] == "identical", let records = Int(arguments[3]), let subscribers = Int(arguments[4]), let commits = Int(arguments[5]) {
    let median = try runIdentical(backend: arguments[2], records: records, subscribers: subscribers, commits: commits)
    say("\(arguments[2]) \(records) records, \(subscribers) identical subscription(s): median \(format(median)) per commit")
    exit(0)
}
// `overlap BACKEND RECORDS SUBSCRIBERS COMMITS`: distinct subscriptions holding the same records.
if arguments.count == 6, arguments[1] == "overlap", let records = Int(arguments[3]), let subscribers = Int(arguments[4]), let commits = Int(arguments[5]) {
    let median = try runOverlap(backend: arguments[2], records: records, subscribers: subscribers, commits: commits)
    say("\(arguments[2]) \(records) records, \(subscribers) overlapping subscription(s): median \(format(median)) per commit")
    exit(0)
}

var results: [String: Double] = [:]
say("records  subscribers  live (median/commit)  naive re-fetch (median/commit)  naive/live")
for records in [10_000, 100_000] {
    for subscribers in [1, 100] {
        let liveTime = try live(records: records, subscribers: subscribers, commits: 200)
        let naiveCommits = records * subscribers >= 1_000_000 ? 3 : 15
        let naiveTime = try naive(records: records, subscribers: subscribers, commits: naiveCommits)
        results["\(records)/\(subscribers)"] = liveTime
        say(String(format: "%7d  %11d  %20@  %30@  %9.0fx", records, subscribers, format(liveTime), format(naiveTime), naiveTime / liveTime))
    }
}
for subscribers in [1, 100] {
    if let small = results["10000/\(subscribers)"], let large = results["100000/\(subscribers)"] {
        say(String(format: "live cost at 100,000 / 10,000 records, %d subscriber(s): %.2fx", subscribers, large / small))
    }
}
