import Foundation
import OpenCombineShim
@testable import Reservoir
import Testing

private struct Tally: Storable {
    var id: Int
    var count: Int
    static let schema = Schema<Tally>("tallies", fields: [.field(\.count)])
}

/// A commit signal the test fires by hand, on a thread of its choosing.
private final class HandWatch: CommitWatch, @unchecked Sendable {
    // @unchecked: `wake` is set once, under `lock`.
    let ownThread: Bool
    private let lock = NSLock()
    private var wake: (@Sendable () -> Void)?

    init(ownThread: Bool) { self.ownThread = ownThread }

    func set(_ wake: @escaping @Sendable () -> Void) {
        lock.withLock { self.wake = wake }
    }

    func fire() { lock.withLock { wake }?() }
    func cancel() { lock.withLock { wake = nil } }
    var wakesAfterCommitIsVisible: Bool { true }
    var wakesOnItsOwnThread: Bool { ownThread }
}

/// One memory backend seen by two stores (as two processes see one file), with a hand-fired signal.
private final class SignalledMemory: StorageBackend {
    let inner: MemoryBackend
    let watch: HandWatch

    init(_ inner: MemoryBackend, ownThread: Bool) {
        self.inner = inner
        watch = HandWatch(ownThread: ownThread)
    }

    var capabilities: BackendCapabilities { [.multiProcess, .commitSignal] }
    /// Each its own location, as two processes' stores: stores on one location in one process
    /// hear each other's commits without a signal.
    let location = "memory-\(UUID().uuidString)"
    func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R { try inner.read(body) }
    func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R { try inner.write(body) }
    func commitToken() throws -> UInt64 { try inner.commitToken() }
    func close() {}

    func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)? {
        watch.set(wake)
        return watch
    }
}

/// A signal that wakes on a thread kept for its one store (``CommitWatch/wakesOnItsOwnThread``,
/// PostgreSQL's listener) has the store probe and deliver on that thread: when the wake-up
/// returns, the subscribers have the other process's commit, handed to them on that thread.
@Suite("Store: a commit signal's own thread")
struct CommitWatchThreadTests {
    @Test("a wake-up on the signal's own thread probes and delivers before it returns, on that thread")
    func wakeOnOwnThreadDeliversInline() throws {
        let memory = MemoryBackend()
        defer { memory.close() }
        let backend = SignalledMemory(memory, ownThread: true)
        // The timer stays away (an hour): only the hand-fired signal finds the other commits.
        let store = try Store(backend: backend, pollInterval: .seconds(3600), usesCommitSignal: true)
        let elsewhere = try Store(backend: SignalledMemory(memory, ownThread: true), pollInterval: .seconds(3600), usesCommitSignal: false)
        defer {
            store.close()
            elsewhere.close()
        }
        // Threads told apart by `pthread_self()` (Foundation's `Thread.current.name` inside a
        // dispatch block is not the thread's).
        let seen = Locked<[(count: Int, thread: UInt)]>([])
        let started = DispatchSemaphore(value: 0)
        let subscription = store.differencesPublisher(for: FetchRequest<Tally>(sortBy: [.ascending(\.id)]), isolation: nil)
            .sink(receiveCompletion: { _ in }, receiveValue: { difference in
                let thread = currentThreadID()
                for case let .insert(_, tally, _) in difference { seen.withLock { $0.append((tally.count, thread)) } }
                if difference.isEmpty { started.signal() }
            })
        defer { subscription.cancel() }
        // The first value (the empty initial fetch) comes first, from wherever it is loaded.
        #expect(started.wait(timeout: .now() + 30) == .success)
        // The probe a store queues as it starts watching has run: a commit it found would be
        // delivered from the poll queue, not from the signal's thread this test watches.
        store.poller.waitForQueuedProbes()
        for round in 1...20 {
            try elsewhere.write { try $0.insert(Tally(id: round, count: round)) }
            let fired = Locked(false)
            let done = DispatchSemaphore(value: 0)
            let signal = Thread {
                backend.watch.fire()
                // Returned: the probe ran here and delivered already.
                let now = seen.withLock { $0 }
                fired.withLock { $0 = now.last?.count == round && now.last?.thread == currentThreadID() }
                done.signal()
            }
            signal.start()
            #expect(done.wait(timeout: .now() + 30) == .success)
            #expect(fired.withLock { $0 }, "round \(round): \(seen.withLock { $0.suffix(2).map(\.count) })")
        }
    }
}
