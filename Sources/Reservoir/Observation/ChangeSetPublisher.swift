import Foundation
import OpenCombineShim

extension Store {
    /// Every ``ChangeSet`` this store commits or finds in its change log, in commit order.
    ///
    /// Values arrive synchronously on the committing thread, before that `write` returns.
    /// A subscriber sees the change sets committed after it subscribed; while it has no
    /// demand they are buffered (no change set is dropped) and sent when it asks again.
    public var changes: ChangeSetPublisher { ChangeSetPublisher(store: self) }
}

/// The publisher behind ``Store/changes``.
public struct ChangeSetPublisher: Publisher {
    public typealias Output = ChangeSet
    public typealias Failure = Never

    let store: Store

    public func receive<S: Subscriber>(subscriber: S) where S.Input == ChangeSet, S.Failure == Never {
        let inner = Inner(downstream: subscriber, hub: store.hub)
        inner.attach()
        subscriber.receive(subscription: inner)
    }

    private final class Inner<Downstream: Subscriber>: Subscription, ChangeObserver, @unchecked Sendable
    where Downstream.Input == ChangeSet, Downstream.Failure == Never {
        // @unchecked: mutable state is guarded by `lock`; downstream is only called outside it.
        private let lock = NSLock()
        private var downstream: Downstream?
        private var demand: Subscribers.Demand = .none
        private var buffer: [ChangeSet] = []
        private var isSending = false
        private let hub: ChangeHub
        private var token: UInt64 = 0

        init(downstream: Downstream, hub: ChangeHub) {
            self.downstream = downstream
            self.hub = hub
        }

        /// Starts observing; called once, before the subscriber gets the subscription.
        func attach() {
            let token = hub.addObserver(self)
            lock.lock()
            self.token = token
            lock.unlock()
        }

        func request(_ demand: Subscribers.Demand) {
            lock.lock()
            guard downstream != nil else { return lock.unlock() }
            self.demand += demand
            sendLocked()
        }

        func cancel() {
            lock.lock()
            let wasActive = downstream != nil
            downstream = nil
            buffer = []
            let token = self.token
            lock.unlock()
            if wasActive { hub.removeObserver(token) }
        }

        func storeDidCommit(_ changeSet: ChangeSet) {
            lock.lock()
            guard downstream != nil else { return lock.unlock() }
            buffer.append(changeSet)
            sendLocked()
        }

        /// Sends buffered values while there is demand. Called with the lock held; returns
        /// with it released. A re-entrant call (from inside `receive`) leaves the sending
        /// to the outer loop.
        private func sendLocked() {
            guard !isSending else { return lock.unlock() }
            isSending = true
            while demand > 0, !buffer.isEmpty, let target = downstream {
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
    }
}
