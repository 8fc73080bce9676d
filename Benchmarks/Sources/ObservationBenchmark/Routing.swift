import Foundation
import OpenCombineShim
import Reservoir
import ReservoirSQLite

// Routing and sharing (issue #22 §1): many distinct subscriptions, one per channel, where a
// one-record commit should cost only what it affects; and many identical subscriptions,
// which should share one maintained result.

struct Message: Storable {
    var id: Int
    var channel: Int
    var body: String
    var position: Int
    static let schema = Schema<Message>("messages", fields: [.field(\.channel, indexed: true), .field(\.body), .field(\.position)])
}

/// Opens `backend` ("memory" or "sqlite") on a fresh location.
func openBenchmarkStore(_ backend: String) throws -> Store {
    switch backend {
    case "memory":
        return try Store.open("memory:")
    case "sqlite":
        let path = NSTemporaryDirectory() + "observation-benchmark-\(UUID().uuidString).sqlite"
        return try Store.open("sqlite:" + path, registry: BackendRegistry([.sqlite]))
    default:
        throw ReservoirError(.invalidConfiguration, "backend \"\(backend)\"; expected memory or sqlite")
    }
}

/// Fills `store` with `records` messages spread evenly over `channels` channels, in batches.
func fillMessages(_ store: Store, records: Int, channels: Int) throws {
    let batch = 50_000
    var start = 0
    while start < records {
        let end = min(records, start + batch)
        try store.write { tx in
            for i in start..<end {
                try tx.insert(Message(id: i, channel: i % channels, body: "message \(i)", position: i))
            }
        }
        start = end
    }
}

/// Median and 90th percentile nanoseconds of `commits` one-record updates that stay in
/// their channel, checking each reached exactly `expected` subscriptions.
func measureMessageCommits(_ store: Store, records: Int, commits: Int, received: Counter, expected: Int, channels: (used: Int, of: Int)? = nil, ids: Range<Int>? = nil) throws -> (median: Double, p90: Double) {
    var samples: [Double] = []
    var random = SystemRandomNumberGenerator()
    for commit in 0..<commits {
        // With `channels`, a record in one of the first `used` channels (id % of == channel).
        let id = channels.map { Int.random(in: 0..<(records / $0.of), using: &random) * $0.of + Int.random(in: 0..<$0.used, using: &random) }
            ?? Int.random(in: ids ?? 0..<records, using: &random)
        let before = received.count
        let start = DispatchTime.now().uptimeNanoseconds
        try store.write { tx in
            guard var message = try tx.get(Message.self, id: id) else { throw ReservoirError(.notFound, "message \(id)") }
            message.body = "message \(id) v\(commit)"
            try tx.update(message)
        }
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        guard received.count - before == expected else {
            throw ReservoirError(.backend, "expected \(expected) values for the commit, got \(received.count - before)")
        }
    }
    samples.sort()
    return (samples[samples.count / 2], samples[samples.count * 9 / 10])
}

/// `distinct BACKEND RECORDS`: a baseline commit with no subscriptions, then with 100 and
/// 10,000 subscriptions each on its own channel (`channel == c`), records spread over 10,000
/// channels. Prints each median per commit and the cost beyond the baseline. With `ranges`,
/// subscription c is instead the range `channel >= c && channel < c + 1` (the same records,
/// routed by range rather than by key; on the indexed channel, so subscribing does not scan).
func runDistinct(backend: String, records: Int, commits: Int, ranges: Bool = false) throws {
    let channels = 10_000
    var clock = DispatchTime.now().uptimeNanoseconds
    func lap(_ what: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        note(String(format: "%@: %.2f s", what, Double(now - clock) / 1e9))
        clock = now
    }
    let store = try openBenchmarkStore(backend)
    try fillMessages(store, records: records, channels: channels)
    lap("distinct \(backend): filled \(records) records over \(channels) channels")
    let received = Counter()
    let baseline = try measureMessageCommits(store, records: records, commits: commits, received: received, expected: 0)
    say("\(backend) \(records) records, \(ranges ? "ranges" : "distinct"): no subscriptions      median \(format(baseline.median))  p90 \(format(baseline.p90)) per commit")
    var cancellables: [AnyCancellable] = []
    for subscribers in [100, 10_000] {
        let before = allocatedBytes()
        let already = cancellables.count
        while cancellables.count < subscribers {
            let channel = cancellables.count
            let request = ranges
                ? FetchRequest<Message>(where: \.channel >= channel && \.channel < channel + 1, sortBy: [.ascending(\.position)])
                : FetchRequest<Message>(where: \.channel == channel, sortBy: [.ascending(\.position)])
            cancellables.append(store.differencesPublisher(for: request).sink(receiveCompletion: { _ in }, receiveValue: { _ in received.add() }))
        }
        lap("subscribed \(subscribers) (one fetch each)")
        // Channel c holds the ids i with i % channels == c.
        let held = (already..<subscribers).reduce(0) { $0 + records / channels + ($1 < records % channels ? 1 : 0) }
        let mode = ranges ? "ranges" : "distinct"
        say("\(backend) \(records) records, \(mode): subscriptions \(already)..<\(subscribers) " + HeldMemory(since: before, subscriptions: subscribers - already, heldRecords: held).line)
        // Only commits to subscribed channels reach a subscription; pick those records.
        let result = try measureMessageCommits(store, records: records, commits: commits, received: received, expected: 1, channels: (subscribers, channels))
        say("\(backend) \(records) records, \(mode): \(String(format: "%6d", subscribers)) subscriptions  median \(format(result.median))  p90 \(format(result.p90)) per commit, \(format(result.median - baseline.median)) beyond the commit")
    }
    cancellables.forEach { $0.cancel() }
}

/// `identical BACKEND RECORDS SUBSCRIBERS COMMITS`: SUBSCRIBERS subscriptions to one request.
func runIdentical(backend: String, records: Int, subscribers: Int, commits: Int) throws -> Double {
    let store = try openBenchmarkStore(backend)
    try fillMessages(store, records: records, channels: 10)
    let request = FetchRequest<Message>(where: \.position >= 0, sortBy: [.descending(\.position)])
    let received = Counter()
    var cancellables: [AnyCancellable] = []
    let before = allocatedBytes()
    for _ in 0..<subscribers {
        cancellables.append(store.differencesPublisher(for: request).sink(receiveCompletion: { _ in }, receiveValue: { _ in received.add() }))
    }
    guard received.count == subscribers else { throw ReservoirError(.backend, "initial values: \(received.count)") }
    say("\(backend) \(records) records, identical: " + HeldMemory(since: before, subscriptions: subscribers, heldRecords: records * subscribers).line)
    let result = try measureMessageCommits(store, records: records, commits: commits, received: received, expected: subscribers)
    cancellables.forEach { $0.cancel() }
    return result.median
}

/// `overlap BACKEND RECORDS SUBSCRIBERS COMMITS`: SUBSCRIBERS distinct subscriptions that hold
/// nearly the same records (subscription i is `position >= i`, every other one in another
/// sort order), so what a held record costs shows when records are not shared between them.
func runOverlap(backend: String, records: Int, subscribers: Int, commits: Int) throws -> Double {
    let store = try openBenchmarkStore(backend)
    try fillMessages(store, records: records, channels: 10)
    let received = Counter()
    var cancellables: [AnyCancellable] = []
    let before = allocatedBytes()
    for i in 0..<subscribers {
        let sort: [SortKey<Message>] = i % 2 == 0 ? [.ascending(\.position)] : [.descending(\.body)]
        let request = FetchRequest<Message>(where: \.position >= i, sortBy: sort)
        cancellables.append(store.differencesPublisher(for: request).sink(receiveCompletion: { _ in }, receiveValue: { _ in received.add() }))
    }
    guard received.count == subscribers else { throw ReservoirError(.backend, "initial values: \(received.count)") }
    let held = (0..<subscribers).reduce(0) { $0 + max(0, records - $1) }
    say("\(backend) \(records) records, overlap: " + HeldMemory(since: before, subscriptions: subscribers, heldRecords: held).line)
    // Records every subscription holds: ids at or past the last subscription's bound.
    let result = try measureMessageCommits(store, records: records, commits: commits, received: received, expected: subscribers, ids: subscribers..<records)
    cancellables.forEach { $0.cancel() }
    return result.median
}
