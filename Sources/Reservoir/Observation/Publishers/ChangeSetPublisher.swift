import Foundation
import OpenCombineShim

extension Store {
    /// Every ``ChangeSet`` this store commits or finds in its change log, in commit order.
    ///
    /// Values arrive synchronously on the committing thread, before that `write` returns.
    /// A subscriber sees the change sets committed after it subscribed; while it has no
    /// demand they are buffered (no change set is dropped) and sent when it asks again.
    public var changeSets: ChangeSetPublisher { ChangeSetPublisher(store: self) }
}

/// The publisher behind ``Store/changeSets``.
public struct ChangeSetPublisher: Publisher {
    /// Every committed change set.
    public typealias Output = ChangeSet
    /// The stream of change sets never fails; it finishes when the store closes or stops.
    public typealias Failure = Never

    let store: Store

    /// Attaches `subscriber`; change sets committed from then on are buffered until it asks for them.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == ChangeSet, S.Failure == Never {
        // A stream that cannot fail ends with `.finished` when the store stops (its files gone).
        ChangeSetSubscription.attach(subscriber, to: store) { downstream, _ in downstream.receive(completion: .finished) }
    }
}

/// ``Store/changeSets`` as a publisher that fails with the store's error when the store stops
/// (its files gone), for the publishers built on it whose failure type is `any Error`.
struct FailingChangeSetPublisher: Publisher {
    typealias Output = ChangeSet
    typealias Failure = any Error

    let store: Store

    func receive<S: Subscriber>(subscriber: S) where S.Input == ChangeSet, S.Failure == any Error {
        ChangeSetSubscription.attach(subscriber, to: store) { $0.receive(completion: .failure($1)) }
    }
}

/// The subscription behind ``ChangeSetPublisher`` and ``FailingChangeSetPublisher``.
/// Change sets are buffered while there is no demand (none is dropped). When the store
/// stops, what is buffered is still sent as demand allows, then `end` completes the stream.
private final class ChangeSetSubscription<Downstream: Subscriber>: Subscription, ChangeObserver, @unchecked Sendable
where Downstream.Input == ChangeSet {
    // @unchecked: mutable state is guarded by `lock`; downstream is only called outside it.
    /// Guards the downstream, demand, buffer and state. A leaf in the store's lock order (see
    /// ``ChangeHub``): nothing is taken under it, and the downstream is called with it released.
    private let lock = NSLock()
    private var downstream: Downstream?
    private var demand: Subscribers.Demand = .none
    private var buffer: [ChangeSet] = []
    private var isSending = false
    private var stoppedWith: ReservoirError?
    private let hub: ChangeHub
    private var token: UInt64 = 0
    private let end: (Downstream, ReservoirError) -> Void

    private init(downstream: Downstream, hub: ChangeHub, end: @escaping (Downstream, ReservoirError) -> Void) {
        self.downstream = downstream
        self.hub = hub
        self.end = end
    }

    /// Observes the store's hub, then hands the subscriber its subscription; a store that
    /// stopped already ends the stream at once.
    static func attach(_ downstream: Downstream, to store: Store, end: @escaping (Downstream, ReservoirError) -> Void) {
        let subscription = ChangeSetSubscription(downstream: downstream, hub: store.hub, end: end)
        let token = store.hub.addObserver(subscription)
        subscription.lock.lock()
        subscription.token = token
        subscription.lock.unlock()
        downstream.receive(subscription: subscription)
        if let failure = store.hub.failure { subscription.storeDidFail(failure) }
    }

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
        if let token { hub.removeObserver(token) }
    }

    func storeDidCommit(_ changeSet: ChangeSet) {
        lock.lock()
        guard downstream != nil else { return lock.unlock() }
        buffer.append(changeSet)
        sendLocked()
    }

    func storeDidFail(_ error: ReservoirError) {
        lock.lock()
        guard downstream != nil else { return lock.unlock() }
        stoppedWith = error
        sendLocked()
    }

    /// Sends buffered values while there is demand, then the end once the store stopped and
    /// the buffer is empty. Called with the lock held; returns with it released. A
    /// re-entrant call (from inside `receive`) leaves the sending to the outer loop.
    private func sendLocked() {
        guard !isSending else { return lock.unlock() }
        isSending = true
        while let target = downstream {
            if buffer.isEmpty, let error = stoppedWith {
                let token = finishLocked()
                lock.unlock()
                if let token { hub.removeObserver(token) }
                end(target, error)
                return
            }
            guard demand > 0, !buffer.isEmpty else { break }
            let next = buffer.removeFirst()
            demand -= 1
            lock.unlock()
            let more = target.receive(next)
            lock.lock()
            demand += more
        }
        isSending = false
        lock.unlock()
    }

    /// Drops the subscriber and the buffer; returns the hub token to remove, once.
    private func finishLocked() -> UInt64? {
        guard downstream != nil else { return nil }
        downstream = nil
        buffer = []
        isSending = false
        return token
    }
}
