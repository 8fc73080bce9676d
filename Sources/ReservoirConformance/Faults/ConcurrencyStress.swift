import Foundation
import OpenCombineShim
import Reservoir

/// Concurrency stress: writer threads, reader threads, and live subscriptions that take
/// demand at random, are cancelled and made anew mid-stream, and write from inside
/// `receive`, all on one store for a fixed number of operations. Then, at quiescence,
/// every subscription (given unlimited demand) must fold to a fresh fetch, the change sets
/// seen must number consecutively to the store's last sequence with none lost or repeated,
/// every snapshot must have been consistent, and nothing may deadlock (a watchdog fails the
/// run after `timeout` seconds).
///
///     try await ConcurrencyStress(harness: myHarness).run(seed: 1, writesPerThread: 300)
public struct ConcurrencyStress: Sendable {
    public let harness: ConformanceHarness

    public init(harness: ConformanceHarness) {
        self.harness = harness
    }

    /// What a run did, for the note a test prints.
    public struct Report: Sendable, CustomStringConvertible {
        public var commits = 0
        public var changeSets = 0
        public var valuesReceived = 0
        public var resubscriptions = 0
        public var reentrantWrites = 0
        public var reads = 0
        public var description: String {
            "\(commits) commits, \(changeSets) change sets, \(valuesReceived) values received, \(resubscriptions) resubscriptions, \(reentrantWrites) writes from inside receive, \(reads) snapshot reads"
        }
    }

    public func run(seed: UInt64, writers: Int = 3, writesPerThread: Int = 200, readers: Int = 2, timeout: Double = 120) async throws -> Report {
        let configuration = try harness.freshConfiguration()
        defer { harness.cleanup(configuration) }
        let store = try Store.open(configuration, registry: harness.registry)
        defer { store.close() }
        try await store.write { tx in for id in 0..<40 { try tx.insert(DifferentialNote(id: id, title: "n\(id)", score: Double(id % 7), rank: id % 5, tag: id % 2 == 0 ? "a" : "b")) } }

        let startSequence = try await store.read { try $0.lastSequence() }
        let shared = StressState()
        let changes = store.changeSets.sink { changeSet in shared.noteChangeSet(changeSet.sequence) }
        defer { changes.cancel() }
        let requests = DifferentialNote.requests
        var subscribers: [FoldingSubscriber] = []
        for (index, request) in requests.enumerated() {
            let subscriber = FoldingSubscriber(seed: seed &+ UInt64(index), shared: shared, store: store, reentrant: index == 1)
            store.differencesPublisher(for: request).subscribe(subscriber)
            subscribers.append(subscriber)
        }

        let writerGroup = DispatchGroup()
        let readerGroup = DispatchGroup()
        for writer in 0..<writers {
            writerGroup.enter()
            Thread.detachNewThread {
                defer { writerGroup.leave() }
                var g = SeededGenerator(seed: seed &* 31 &+ UInt64(writer))
                for _ in 0..<writesPerThread {
                    let note = DifferentialNote.random(&g)
                    do {
                        try store.write { tx in
                            switch g.next() % 6 {
                            case 0: try tx.delete(DifferentialNote.self, id: note.id)
                            case 1: _ = try tx.delete(DifferentialNote.requests[Int(g.next() % 7)])
                            case 2: try tx.upsert(note); throw StressAbort()
                            default: try tx.upsert(note)
                            }
                        }
                        shared.count(\.commits)
                    } catch is StressAbort {
                    } catch {
                        shared.fail("writer \(writer): \(error)")
                    }
                }
            }
        }
        let writing = StressFlag()
        for reader in 0..<readers {
            readerGroup.enter()
            Thread.detachNewThread {
                defer { readerGroup.leave() }
                var g = SeededGenerator(seed: seed &* 97 &+ UInt64(reader))
                while !writing.isDone {
                    let index = Int(g.next() % UInt64(requests.count))
                    do {
                        try store.read { snapshot in
                            let fetched = try snapshot.fetch(requests[index])
                            let counted = try snapshot.count(requests[index])
                            if fetched.count != counted { shared.fail("reader \(reader): request \(index) fetched \(fetched.count) records but counted \(counted) in one snapshot") }
                        }
                        shared.count(\.reads)
                    } catch {
                        shared.fail("reader \(reader): \(error)")
                    }
                }
            }
        }
        // Meanwhile: random demand and resubscription from another thread.
        var g = SeededGenerator(seed: seed ^ 0xABCD)
        let writersDone = StressFlag()
        writerGroup.notify(queue: .global()) { writersDone.set() }
        let deadline = Date().addingTimeInterval(timeout)
        while !writersDone.isDone {
            let subscriber = subscribers[Int(g.next() % UInt64(subscribers.count))]
            switch g.next() % 40 {
            case 0:
                subscriber.cancel()
                let replacement = FoldingSubscriber(seed: g.next(), shared: shared, store: store, reentrant: false)
                store.differencesPublisher(for: requests[subscribers.firstIndex { $0 === subscriber } ?? 0]).subscribe(replacement)
                subscribers[subscribers.firstIndex { $0 === subscriber } ?? 0] = replacement
                shared.count(\.resubscriptions)
            default:
                subscriber.request(.max(Int(1 + g.next() % 3)))
            }
            try await Task.sleep(nanoseconds: 1_000_000)
            if Date() > deadline {
                writing.set()
                throw ConformanceFailure(message: "stress on \(configuration): writers not finished after \(timeout) s (deadlock?); \(shared.report)", file: #fileID, line: #line)
            }
        }
        writing.set()
        let readersDone = StressFlag()
        readerGroup.notify(queue: .global()) { readersDone.set() }
        while !readersDone.isDone {
            try await Task.sleep(nanoseconds: 1_000_000)
            if Date() > deadline {
                throw ConformanceFailure(message: "stress on \(configuration): readers not finished after \(timeout) s (deadlock?)", file: #fileID, line: #line)
            }
        }
        if let failure = shared.firstFailure { throw ConformanceFailure(message: "stress on \(configuration): \(failure)", file: #fileID, line: #line) }

        // Quiescence: let every subscriber catch up, then compare.
        for subscriber in subscribers { subscriber.request(.unlimited) }
        store.pollExternalChanges()
        for (index, subscriber) in subscribers.enumerated() {
            let request = requests[index]
            let fetched = try await store.read { try $0.fetch(request) }.map(\.description)
            try expectEqual(subscriber.folded.map(\.description), fetched, "stress on \(configuration): subscriber \(index) folded")
            try expect(subscriber.problem == nil, "stress on \(configuration): subscriber \(index): \(subscriber.problem ?? "")")
            subscriber.cancel()
        }
        let last = try await store.read { try $0.lastSequence() }
        let sequences = shared.sequences
        try expectEqual(sequences, Array((startSequence + 1)...max(startSequence + 1, last)).filter { $0 <= last }, "stress on \(configuration): change-set sequences seen (consecutive, none lost or repeated)")
        var report = shared.report
        report.changeSets = sequences.count
        return report
    }
}

private struct StressAbort: Error {}

private final class StressFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    var isDone: Bool { lock.lock(); defer { lock.unlock() }; return done }
    func set() { lock.lock(); done = true; lock.unlock() }
}

/// What every thread of a stress run shares, under one lock.
private final class StressState: @unchecked Sendable {
    private let lock = NSLock()
    private var counters = ConcurrencyStress.Report()
    private var seen: [UInt64] = []
    private var failures: [String] = []

    func count(_ counter: WritableKeyPath<ConcurrencyStress.Report, Int>) {
        lock.lock()
        counters[keyPath: counter] += 1
        lock.unlock()
    }

    func value(_ counter: KeyPath<ConcurrencyStress.Report, Int>) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return counters[keyPath: counter]
    }

    func noteChangeSet(_ sequence: UInt64) {
        lock.lock()
        seen.append(sequence)
        lock.unlock()
    }

    func fail(_ message: String) {
        lock.lock()
        failures.append(message)
        lock.unlock()
    }

    var firstFailure: String? { lock.lock(); defer { lock.unlock() }; return failures.first }
    var sequences: [UInt64] { lock.lock(); defer { lock.unlock() }; return seen }
    var report: ConcurrencyStress.Report { lock.lock(); defer { lock.unlock() }; return counters }
}

/// A subscriber that folds the differences it receives and asks for demand at random; one
/// of them also writes from inside `receive` now and then.
private final class FoldingSubscriber: Subscriber, @unchecked Sendable {
    typealias Input = CollectionDifference<DifferentialNote>
    typealias Failure = any Error
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var g: SeededGenerator
    private var list: [DifferentialNote] = []
    private var subscription: (any Subscription)?
    private var issue: String?
    private let shared: StressState
    private let store: Store
    private let reentrant: Bool
    private var reentrantLeft = 20

    init(seed: UInt64, shared: StressState, store: Store, reentrant: Bool) {
        g = SeededGenerator(seed: seed)
        self.shared = shared
        self.store = store
        self.reentrant = reentrant
    }

    var folded: [DifferentialNote] { lock.lock(); defer { lock.unlock() }; return list }
    var problem: String? { lock.lock(); defer { lock.unlock() }; return issue }

    func receive(subscription: any Subscription) {
        lock.lock()
        self.subscription = subscription
        let initial = g.next() % 3 == 0 ? Subscribers.Demand.unlimited : .max(Int(1 + g.next() % 2))
        lock.unlock()
        subscription.request(initial)
    }

    func receive(_ input: CollectionDifference<DifferentialNote>) -> Subscribers.Demand {
        lock.lock()
        if let applied = list.applying(input) {
            list = applied
        } else if issue == nil {
            issue = "a difference did not apply to the list the earlier ones built"
        }
        let more = g.next() % 2 == 0 ? Subscribers.Demand.none : .max(1)
        var write: DifferentialNote?
        if reentrant, reentrantLeft > 0, g.next() % 4 == 0 {
            reentrantLeft -= 1
            write = DifferentialNote.random(&g)
        }
        lock.unlock()
        shared.count(\.valuesReceived)
        if let write {
            // A write from inside receive returns at once; its change set follows this one.
            do {
                try store.write { try $0.upsert(write) }
                shared.count(\.reentrantWrites)
                shared.count(\.commits)
            } catch {
                shared.fail("a write from inside receive: \(error)")
            }
        }
        return more
    }

    func receive(completion: Subscribers.Completion<any Error>) {
        lock.lock()
        if case let .failure(error) = completion, issue == nil { issue = "completed with \(error)" }
        lock.unlock()
    }

    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        let subscription = self.subscription
        lock.unlock()
        subscription?.request(demand)
    }

    func cancel() {
        lock.lock()
        let subscription = self.subscription
        self.subscription = nil
        lock.unlock()
        subscription?.cancel()
    }
}
