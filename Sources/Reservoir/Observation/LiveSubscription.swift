import Foundation
import OpenCombineShim

/// The subscription behind every fetch-driven publisher.
///
/// - The fetch runs when the subscriber attaches, never earlier; change sets committed
///   while it runs are held and applied after it, so none is missed or applied twice.
/// - It keeps its own ``LiveResults``, updated from each change set without re-fetching.
/// - The first value is the whole result as a change from nothing, sent even when nothing
///   matches (so "empty" is told apart from "not fetched yet"). After that, a value is
///   sent only when the results changed; with no demand, changes pile up and go out as
///   one value, against what was last sent, when demand arrives.
/// - A failing fetch or decode completes with `.failure`; after completion or `cancel()`
///   nothing is sent and the subscription stops observing and releases its results.
/// - One lock guards the state and is never held while calling the subscriber, so
///   `request`, `cancel` and writes to the store from inside `receive` are safe.
final class LiveSubscription<Output: LiveOutput, Downstream: Subscriber>: Subscription, ChangeObserver, @unchecked Sendable
where Downstream.Input == Output.Value, Downstream.Failure == any Error {
    // @unchecked: all mutable state is guarded by `lock`.
    private typealias Entry = LiveEntry<Output.Record>

    /// What the subscriber holds, relative to `results`.
    private enum Sent {
        /// Exactly the current results (or a change to them is described by `pendingDelta`).
        case current
        /// This older list; the change since is worked out by identity when sending.
        case list(ChunkedList<Entry>)
    }

    private let lock = NSLock()
    private let store: Store
    private let output: Output
    private var downstream: Downstream?
    private var demand = Subscribers.Demand.none
    private var results: LiveResults<Output.Record>?
    private var sent = Sent.list(ChunkedList())
    private var pendingDelta: LiveResults<Output.Record>.Delta?
    private var hasUnsent = true
    private var sentInitial = false
    private var failure: (any Error)?
    private var isSending = false
    /// Change sets that arrived while the initial fetch ran; nil once it has.
    private var early: [ChangeSet]? = []
    private var token: UInt64?

    private init(store: Store, output: Output, downstream: Downstream) {
        self.store = store
        self.output = output
        self.downstream = downstream
    }

    /// Attaches a subscriber: observes, fetches, hands over the subscription.
    static func attach<T>(_ downstream: Downstream, to store: Store, request: FetchRequest<T>, output: Output) where T == Output.Record {
        let subscription = LiveSubscription(store: store, output: output, downstream: downstream)
        subscription.start(request)
        downstream.receive(subscription: subscription)
        subscription.lock.lock()
        subscription.sendLocked()
    }

    private func start<T>(_ request: FetchRequest<T>) where T == Output.Record {
        let token = store.hub.addObserver(self)
        var fetched: LiveResults<Output.Record>?
        var fetchError: (any Error)?
        do {
            let query = try request.query()
            try output.check(query)
            fetched = try LiveResults(query: query, backend: store.backend)
        } catch {
            fetchError = error
        }
        lock.lock()
        self.token = token
        results = fetched
        failure = fetchError ?? store.hub.failure
        let held = early ?? []
        early = nil
        for changeSet in held { applyLocked(changeSet) }
        lock.unlock()
    }

    // MARK: - Subscription

    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        guard downstream != nil else { return lock.unlock() }
        self.demand += demand
        sendLocked()
    }

    func cancel() {
        lock.lock()
        let token = finishLocked()
        lock.unlock()
        if let token { store.hub.removeObserver(token) }
    }

    // MARK: - Changes

    func storeDidCommit(_ changeSet: ChangeSet) {
        lock.lock()
        guard downstream != nil else { return lock.unlock() }
        if early != nil {
            early?.append(changeSet)
            return lock.unlock()
        }
        applyLocked(changeSet)
        sendLocked()
    }

    func storeDidFail(_ error: ReservoirError) {
        lock.lock()
        guard downstream != nil else { return lock.unlock() }
        if failure == nil { failure = error }
        sendLocked()
    }

    private func applyLocked(_ changeSet: ChangeSet) {
        guard let results, failure == nil else { return }
        // Sending straight away can describe the change by its delta; otherwise keep the
        // list the subscriber holds, once, to compare against when it asks.
        var keptPrevious = false
        if case .current = sent, output.needsPreviousList || demand == .none || isSending || hasUnsent {
            sent = .list(pendingDelta.map { undo($0, from: results.entries) } ?? results.entries)
            pendingDelta = nil
            keptPrevious = true
        }
        do {
            let delta = try results.apply(changeSet, backend: store.backend)
            if delta.isEmpty {
                if keptPrevious && !hasUnsent { sent = .current }
                return
            }
            if case .current = sent {
                pendingDelta = delta
            }
            hasUnsent = true
        } catch {
            failure = error
        }
    }

    // MARK: - Sending

    /// Sends what is due. Called with the lock held; returns with it released.
    private func sendLocked() {
        guard !isSending else { return lock.unlock() }
        isSending = true
        while let target = downstream {
            if let error = failure {
                let token = finishLocked()
                lock.unlock()
                if let token { store.hub.removeObserver(token) }
                target.receive(completion: .failure(error))
                return
            }
            guard demand > 0, hasUnsent, let results else { break }
            let value: Output.Value?
            do {
                switch sent {
                case .current:
                    value = try output.value(previous: ChunkedList(), current: results.entries,
                                             delta: pendingDelta ?? LiveResults.Delta(removed: [], inserted: []), initial: !sentInitial)
                case let .list(previous):
                    value = try output.value(previous: previous, current: results.entries,
                                             delta: identityDelta(from: previous.array, to: results.entries.array), initial: !sentInitial)
                }
            } catch {
                failure = error
                continue
            }
            sent = .current
            pendingDelta = nil
            hasUnsent = false
            guard let value else { continue }
            sentInitial = true
            demand -= 1
            lock.unlock()
            let more = target.receive(value)
            lock.lock()
            demand += more
        }
        isSending = false
        lock.unlock()
    }

    /// The list before `delta` was applied to `current`.
    private func undo(_ delta: LiveResults<Output.Record>.Delta, from current: ChunkedList<Entry>) -> ChunkedList<Entry> {
        var list = current
        for (offset, _) in delta.inserted.reversed() { list.remove(at: offset) }
        for (offset, entry) in delta.removed { list.insert(entry, at: offset) }
        return list
    }

    /// Drops the subscriber and everything held; returns the hub token to remove, once.
    private func finishLocked() -> UInt64? {
        downstream = nil
        results = nil
        sent = .current
        pendingDelta = nil
        early = nil
        defer { token = nil }
        return token
    }
}
