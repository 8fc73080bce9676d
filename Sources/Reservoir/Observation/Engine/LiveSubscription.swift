import Foundation
import OpenCombineShim

/// The subscription behind every fetch-driven publisher.
///
/// - The fetch runs when the subscriber attaches, never earlier; change sets committed
///   while it runs are held and applied after it, so none is missed or applied twice.
/// - Its results are a ``SharedLiveResults``, shared with every live fetch of the same query
///   on the store and updated from each change set without re-fetching; the subscription
///   keeps only what it has sent, its demand and its coalesced changes.
/// - The first value is the whole result as a change from nothing, sent even when nothing
///   matches (so "empty" is told apart from "not fetched yet"). After that, a value is
///   sent only when the results changed; with no demand, changes pile up and go out as
///   one value, against what was last sent, when demand arrives.
/// - A failing fetch or decode completes with `.failure`; after completion or `cancel()`
///   nothing is sent and the subscription stops observing and releases its results.
/// - One lock guards the state and is never held while calling the subscriber, so
///   `request`, `cancel` and writes to the store from inside `receive` are safe.
final class LiveSubscription<Output: LiveOutput, Downstream: Subscriber>: Subscription, SharedResultsMember, @unchecked Sendable
where Downstream.Input == Output.Value, Downstream.Failure == any Error {
    // @unchecked: all mutable state is guarded by `lock`.
    typealias Record = Output.Record
    private typealias Entry = LiveEntry<Output.Record>

    /// What the subscriber holds, relative to `current`.
    private enum Sent {
        /// Exactly `current` (or a change to it is described by `pendingDelta`).
        case current
        /// This older list; the change since is worked out by identity when sending.
        case list(ChunkedList<Entry>)
    }

    /// Guards the downstream, demand, membership and what was sent. Lock order: 2nd of the
    /// store's five (see ``ChangeHub``): the hub's may be taken under it, the shared results'
    /// never; the downstream is called with it released.
    private let lock = NSLock()
    private let output: Output
    private var downstream: Downstream?
    private var demand = Subscribers.Demand.none
    private var shared: SharedLiveResults<Output.Record>?
    private var memberID: UInt64?
    /// The shared results as of the last change this subscription heard of, while it has
    /// something unsent; nil otherwise, so the shared list is not kept alive twice (which
    /// would make the next commit's edit copy it).
    private var current: ChunkedList<Entry>?
    private var isJoined = false
    private var sent = Sent.list(ChunkedList())
    private var pendingDelta: LiveResults<Output.Record>.Delta?
    private var hasUnsent = true
    private var sentInitial = false
    private var failure: (any Error)?
    private var isSending = false

    private init(output: Output, downstream: Downstream) {
        self.output = output
        self.downstream = downstream
    }

    /// Attaches a subscriber: joins (or fetches) the shared results, hands over the subscription.
    static func attach<T>(_ downstream: Downstream, to store: Store, request: FetchRequest<T>, output: Output) where T == Output.Record {
        let subscription = LiveSubscription(output: output, downstream: downstream)
        subscription.start(request, store: store)
        downstream.receive(subscription: subscription)
        subscription.lock.lock()
        subscription.sendLocked()
    }

    private func start<T>(_ request: FetchRequest<T>, store: Store) where T == Output.Record {
        var joined: (SharedLiveResults<Output.Record>, UInt64)?
        var joinError: (any Error)?
        do {
            let query = try request.query()
            try output.check(query)
            joined = try SharedLiveResults.join(self, store: store, query: query)
        } catch {
            joinError = error
        }
        lock.lock()
        shared = joined?.0
        memberID = joined?.1
        if failure == nil { failure = joinError ?? store.hub.failure }
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
        let membership = finishLocked()
        lock.unlock()
        leave(membership)
    }

    // MARK: - Shared results

    func resultsJoined(_ entries: ChunkedList<LiveEntry<Output.Record>>) {
        lock.lock()
        current = entries
        isJoined = true
        lock.unlock()
    }

    func resultsDidChange(after: ChunkedList<LiveEntry<Output.Record>>, delta: LiveResults<Output.Record>.Delta) {
        lock.lock()
        guard downstream != nil, failure == nil, isJoined else { return lock.unlock() }
        // Sending straight away can describe the change by its delta; otherwise keep the
        // list the subscriber holds, once, to compare against when it asks.
        if case .current = sent, output.needsPreviousList || demand == .none || isSending || hasUnsent {
            // The list before this change: the one held, or (everything sent) `after` undone.
            let before = current ?? undo(delta, from: after)
            sent = .list(pendingDelta.map { undo($0, from: before) } ?? before)
            pendingDelta = nil
        }
        current = after
        if case .current = sent {
            pendingDelta = delta
        }
        hasUnsent = true
        sendLocked()
    }

    func resultsDidFail(_ error: any Error) {
        lock.lock()
        guard downstream != nil else { return lock.unlock() }
        if failure == nil { failure = error }
        sendLocked()
    }

    // MARK: - Sending

    /// Sends what is due. Called with the lock held; returns with it released.
    private func sendLocked() {
        guard !isSending else { return lock.unlock() }
        isSending = true
        while let target = downstream {
            if let error = failure {
                let membership = finishLocked()
                lock.unlock()
                leave(membership)
                target.receive(completion: .failure(error))
                return
            }
            guard demand > 0, hasUnsent, let current else { break }
            let value: Output.Value?
            do {
                switch sent {
                case .current:
                    // (`previous` is unused when `needsPreviousList` is false, as it is here.)
                    value = try output.value(previous: current, current: current,
                                             delta: pendingDelta ?? LiveResults.Delta(removed: [], inserted: []), initial: !sentInitial)
                case let .list(previous):
                    value = try output.value(previous: previous, current: current,
                                             delta: identityDelta(from: previous.array, to: current.array), initial: !sentInitial)
                }
            } catch {
                failure = error
                continue
            }
            sent = .current
            pendingDelta = nil
            hasUnsent = false
            self.current = nil
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

    /// Drops the subscriber and everything held; returns the membership to end, once.
    private func finishLocked() -> (SharedLiveResults<Output.Record>, UInt64)? {
        downstream = nil
        current = nil
        sent = .current
        pendingDelta = nil
        defer { shared = nil; memberID = nil }
        guard let shared, let memberID else { return nil }
        return (shared, memberID)
    }

    private func leave(_ membership: (SharedLiveResults<Output.Record>, UInt64)?) {
        if let (shared, id) = membership { shared.leave(id) }
    }
}
