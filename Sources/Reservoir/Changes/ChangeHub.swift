import Foundation

/// One per store: fans committed change sets out to observers, in commit order, each
/// change set only to the observers it can affect (see ``RoutingIndex``).
///
/// Writers enqueue their change set while still holding the store's write lock, so
/// the queue is in commit order; then, after releasing it, they call ``deliver(through:)``.
/// One thread at a time drains the queue and calls observers *outside* the lock. A
/// thread that finds another draining waits until its change set is delivered, so
/// `write` returns only after its change set reached every observer. The exception is
/// a write made from inside an observer (the draining thread itself): it returns at
/// once and its change set is delivered right after the current one, which keeps the
/// order without deadlocking.
final class ChangeHub: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`. They also opt out of
    // dynamic exclusivity checks, for the reason every other `@exclusivity(unchecked)` on
    // lock-guarded state points to here: the runtime check is per-thread, so it never
    // guards against races, and it costs about 80 instructions an access. Each access is
    // under `condition` and none overlaps another.
    private struct Entry {
        weak var observer: (any ChangeObserver)?
    }

    private struct WeakShared {
        weak var results: AnyObject?
    }

    /// Guards every stored property below but `records`. **The store's lock order** (take
    /// them top to bottom, never upward; each declaration repeats its place):
    /// 1. ``SharedLiveResults``' condition (a shared live fetch),
    /// 2. ``LiveSubscription``'s lock (one subscriber),
    /// 3. this condition (the hub),
    /// 4. ``SharedRecords``' lock (the store's record tables),
    /// 5. ``SharedRecordTable``'s lock (one entity's held records).
    /// The locks of ``ChangeSetPublisher``'s subscription, ``MainActorFeed`` and
    /// ``MainActorDelivery`` are leaves: nothing else is taken while one is held. Subscribers
    /// are always called with none of these held.
    private let condition = NSCondition()
    /// The decoded records live fetches hold, once per store (its own lock, not `condition`).
    let records = SharedRecords()
    @exclusivity(unchecked) private var observers: [UInt64: Entry] = [:]
    /// Which observers each change set can affect (see ``RoutingIndex``).
    @exclusivity(unchecked) private var index = RoutingIndex()
    /// Live results shared by identical live fetches, by record type and query.
    @exclusivity(unchecked) private var shared: [SharedResultsKey: WeakShared] = [:]
    @exclusivity(unchecked) private var nextToken: UInt64 = 0
    @exclusivity(unchecked) private var pending: [ChangeSet] = []
    @exclusivity(unchecked) private var drainer: pthread_t?
    /// Delivery order: every enqueued change set takes the next ticket, and `delivered` is the
    /// ticket of the last one every observer has had. Tickets, not sequences, because a
    /// rewound history (``ChangeSet/isRewound``) announces a sequence already passed.
    @exclusivity(unchecked) private var delivered: UInt64 = 0
    @exclusivity(unchecked) private var enqueued: UInt64 = 0
    /// The position of the newest change set enqueued (or skipped): what the store has announced.
    @exclusivity(unchecked) private var position: CommitPosition
    @exclusivity(unchecked) private var failedWith: ReservoirError?
    /// The store's identity, stamped on every change set enqueued (``ChangeSet/store``).
    @exclusivity(unchecked) private var storeIdentity: UUID?

    /// A hub whose next change set is expected to follow `position`, of the store `identity`.
    init(after position: CommitPosition, identity: UUID?) {
        self.position = position
        storeIdentity = identity
    }

    /// The identity stamped on change sets; nil until the store has one.
    var identity: UUID? {
        get {
            condition.lock()
            defer { condition.unlock() }
            return storeIdentity
        }
        set {
            condition.lock()
            defer { condition.unlock() }
            storeIdentity = newValue
        }
    }

    /// The sequence of the newest change set enqueued so far.
    var lastEnqueued: UInt64 {
        lastPosition.sequence
    }

    /// The position of the newest change set enqueued (or skipped) so far.
    var lastPosition: CommitPosition {
        condition.lock()
        defer { condition.unlock() }
        return position
    }

    /// The ticket of the newest change set enqueued: ``deliver(through:)`` and
    /// ``waitUntilDelivered(through:)`` take it.
    var lastTicket: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return enqueued
    }

    /// Adds an observer, held weakly; it sees every change set enqueued from now on that
    /// `route` says can affect it (nil: every change set).
    func addObserver(_ observer: any ChangeObserver, route: SubscriptionRoute? = nil) -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        nextToken += 1
        observers[nextToken] = Entry(observer: observer)
        index.add(nextToken, route: route)
        return nextToken
    }

    /// Removes an observer. A delivery already under way may still reach it once.
    func removeObserver(_ token: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        observers[token] = nil
        index.remove(token)
    }

    /// Ends a keyed observer's "every change to the entity" start, once the records it
    /// holds are in ``records`` under its token (see ``RoutingIndex/setReady(_:)``).
    func setReady(_ token: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        guard observers[token] != nil else { return }
        index.setReady(token)
    }

    /// ``lastPosition`` when no change set is waiting or being delivered (nil otherwise): every
    /// change set an observer added before this call hears from now on comes after it (or
    /// after a commit skipped as unchanged since).
    var idlePosition: CommitPosition? {
        condition.lock()
        defer { condition.unlock() }
        return drainer == nil && pending.isEmpty ? position : nil
    }

    /// Whether no change set is waiting or being delivered: shared live results are then
    /// exactly as current as a fresh fetch would be.
    var isIdle: Bool {
        condition.lock()
        defer { condition.unlock() }
        return drainer == nil && pending.isEmpty
    }

    /// The shared results for `key`, or new ones made by `make` (under the hub's lock, so it
    /// must not call back into the hub). Existing results are reused only while no change
    /// set is waiting or being delivered, so a joining subscriber starts exactly where a
    /// fresh fetch would (and the store shows no commit past `visibleSequence` that the hub
    /// has not enqueued), and never when they are `replacing` (found closed by the caller).
    func sharedResults<S: AnyObject>(_ key: SharedResultsKey, visibleSequence: UInt64, replacing: AnyObject?, make: () -> S) -> (results: S, isNew: Bool) {
        condition.lock()
        defer { condition.unlock() }
        if let existing = shared[key]?.results as? S, existing !== replacing, drainer == nil, pending.isEmpty, position.sequence >= visibleSequence {
            return (existing, false)
        }
        let made = make()
        shared[key] = WeakShared(results: made)
        return (made, true)
    }

    /// Forgets `results` as the shared results for `key` (its last subscriber left, or it failed).
    func dropSharedResults(_ key: SharedResultsKey, _ results: AnyObject) {
        condition.lock()
        defer { condition.unlock() }
        if let existing = shared[key], existing.results == nil || existing.results === results { shared[key] = nil }
    }

    /// Queues a committed change set. Change sets at or below the last enqueued
    /// sequence are dropped, so a commit found twice (own write, then the change log) is
    /// announced once; a rewound history (``ChangeSet/isRewound``) is always queued, and its
    /// position becomes the last. Returns the change set's ticket, nil when it was dropped.
    @discardableResult
    func enqueue(_ changeSet: ChangeSet) -> UInt64? {
        condition.lock()
        defer { condition.unlock() }
        guard changeSet.sequence > position.sequence || changeSet.isRewound else { return nil }
        position = changeSet.position
        var stamped = changeSet
        stamped.store = storeIdentity
        pending.append(stamped)
        enqueued += 1
        return enqueued
    }

    /// The error the store stopped with, if it did (see ``fail(_:)``).
    var failure: ReservoirError? {
        condition.lock()
        defer { condition.unlock() }
        return failedWith
    }

    /// Tells every observer, once, that the store can no longer deliver changes (its files
    /// are gone): live subscriptions complete with `error`. Observers added later are
    /// expected to check ``failure``.
    func fail(_ error: ReservoirError) {
        condition.lock()
        guard failedWith == nil else { return condition.unlock() }
        failedWith = error
        let targets = index.all.sorted().compactMap { observers[$0]?.observer }
        condition.unlock()
        for target in targets { target.storeDidFail(error) }
    }

    /// Marks the commit at `skipped` as seen without announcing anything: for a commit that
    /// netted to no change (another SQL client wrote a row back as it was).
    func skip(through skipped: CommitPosition) {
        condition.lock()
        defer { condition.unlock() }
        if skipped.sequence > position.sequence { position = skipped }
    }

    /// Returns once every change set up to the one with `ticket` has reached every observer,
    /// delivering them on this thread if no other thread is.
    func deliver(through ticket: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        while delivered < ticket {
            if let drainer {
                if pthread_equal(drainer, pthread_self()) != 0 { return }  // re-entrant: the outer drain delivers it
                // Wait even when `pending` is empty: the drainer may be delivering the last
                // change set it took, which may be ours.
                condition.wait()
                continue
            }
            guard !pending.isEmpty else { return }  // nothing left to deliver
            drainer = pthread_self()
            while !pending.isEmpty {
                let next = pending.removeFirst()
                var targets: [any ChangeObserver] = []
                for token in index.targets(of: next, holders: records) {
                    if let observer = observers[token]?.observer {
                        targets.append(observer)
                    } else {
                        // Released without being removed: stop routing to it.
                        observers[token] = nil
                        index.remove(token)
                    }
                }
                condition.unlock()
                for target in targets { target.storeDidCommit(next) }
                condition.lock()
                delivered += 1
                condition.broadcast()
            }
            drainer = nil
            condition.broadcast()
        }
    }
}

extension ChangeHub {
    /// Returns once every change set up to the one with `ticket` has reached every observer, without
    /// delivering any itself: for a thread that enqueued none of them (the poller, woken by
    /// this store's own commit). Every change set has a thread that will deliver it, the one
    /// that enqueued it; were the poller to take over, a local commit's observers would hear
    /// of it on the poller's thread instead of the committing one.
    func waitUntilDelivered(through ticket: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        while delivered < ticket {
            if let drainer, pthread_equal(drainer, pthread_self()) != 0 { return }
            if drainer == nil && pending.isEmpty { return }  // nothing left to deliver
            condition.wait()
        }
    }
}

/// Something the ``ChangeHub`` delivers change sets to: subscriptions and publishers.
protocol ChangeObserver: AnyObject, Sendable {
    /// Called on the delivering thread, outside the hub's lock, once per change set, in order.
    func storeDidCommit(_ changeSet: ChangeSet)

    /// Called once when the store stops delivering changes for good (``ChangeHub/fail(_:)``).
    func storeDidFail(_ error: ReservoirError)
}
