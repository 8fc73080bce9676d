import Foundation
import OpenCombineShim

extension Store {
    /// Everything committed after `token`, then every later commit as it happens: the history
    /// read from the change log while catching up, then the store's live change sets, with no
    /// gap and nothing twice at the switch (and none across a reopening or another process:
    /// resume from the last token received).
    ///
    /// Values arrive on a queue of the subscription's own, as demand allows (catch-up reads a
    /// batch of at most 1,000 change sets at a time, and only while there is demand; live
    /// change sets are buffered, never dropped). It fails with `.historyExpired` when the store
    /// can no longer say what came after `token` (see ``Snapshot/history(after:limit:)``) or when
    /// it finds its history rewound under the subscriber (commits it sent were lost); with
    /// `.closed` after the store closes, once what was committed before has been sent.
    public func historyPublisher(after token: HistoryToken) -> HistoryPublisher {
        HistoryPublisher(store: self, token: token)
    }

    /// ``historyPublisher(after:)`` as an async sequence: `for try await changeSet in store.history(after: token)`.
    public func history(after token: HistoryToken) -> AsyncThrowingPublisher<HistoryPublisher> {
        historyPublisher(after: token).values
    }
}

/// The publisher ``Store/historyPublisher(after:)`` returns.
public struct HistoryPublisher: Publisher {
    /// One committed change set.
    public typealias Output = HistoryChangeSet
    /// `.historyExpired`, `.invalidToken`, `.closed`, or what reading the store threw.
    public typealias Failure = any Error

    let store: Store
    let token: HistoryToken

    public func receive<S: Subscriber>(subscriber: S) where S.Input == HistoryChangeSet, S.Failure == any Error {
        HistorySubscription(downstream: AnySubscriber(subscriber), store: store, token: token).start()
    }
}

/// The subscription behind ``HistoryPublisher``: a hub observer (through
/// ``FailingChangeSetPublisher``) registered before the first read of the log, so every commit
/// is either in what the log reads return or among the live change sets, and those at or before
/// the last token sent are dropped.
/// The downstream is type-erased: the subscription hops to its own queue, and a closure sent
/// there may not capture a generic subscriber's (non-Sendable) metatype.
private final class HistorySubscription: Subscription, @unchecked Sendable {
    typealias Downstream = AnySubscriber<HistoryChangeSet, any Error>
    // @unchecked: mutable state is guarded by `lock`; the store and downstream are called
    // only on `queue`, outside it.
    /// Guards everything below. A leaf in the store's lock order (see ``ChangeHub``).
    private let lock = NSLock()
    private var downstream: Downstream?
    private var demand: Subscribers.Demand = .none
    /// The token of the last change set sent (or read for sending).
    private var last: HistoryToken
    /// Read or converted, not sent yet.
    private var ready: [HistoryChangeSet] = []
    /// Live change sets not looked at yet.
    private var live: [ChangeSet] = []
    /// Whether the next change sets come from the log (at the start, and after a gap).
    private var readsLog = true
    /// Whether the store has answered for the token given (a first read of the log succeeded).
    private var tokenChecked = false
    private var ended: (any Error)?
    private var upstream: AnyCancellable?
    private var draining = false
    private let store: Store
    private let queue = DispatchQueue(label: "reservoir.history")

    init(downstream: Downstream, store: Store, token: HistoryToken) {
        self.downstream = downstream
        self.store = store
        last = token
    }

    func start() {
        let upstream = FailingChangeSetPublisher(store: store).sink(
            receiveCompletion: { [weak self] completion in
                guard let self, case let .failure(error) = completion else { return }
                lock.withLock { if ended == nil { ended = error } }
                schedule()
            },
            receiveValue: { [weak self] changeSet in
                guard let self else { return }
                lock.withLock { live.append(changeSet) }
                schedule()
            })
        lock.withLock { self.upstream = upstream }
        // The token is checked now, on the subscribing thread, with the observer already in
        // place: a token the store cannot answer for fails at once, and once it is known good
        // the live change sets can take over even if the store closes before the first batch.
        let checked = Result { try store.history(after: last, limit: 1) }
        downstream?.receive(subscription: self)
        switch checked {
        case .success:
            lock.withLock { tokenChecked = true }
            schedule()
        case let .failure(error):
            let target = lock.withLock { () -> Downstream? in
                defer { downstream = nil }
                return downstream
            }
            target?.receive(completion: .failure(error))
            cancel()
        }
    }

    func request(_ demand: Subscribers.Demand) {
        lock.withLock { self.demand += demand }
        schedule()
    }

    func cancel() {
        let upstream = lock.withLock { () -> AnyCancellable? in
            downstream = nil
            ready = []
            live = []
            defer { self.upstream = nil }
            return self.upstream
        }
        upstream?.cancel()
    }

    private func schedule() {
        queue.async { self.drain() }
    }

    /// On `queue`: fills `ready` (from the log or the live change sets) while there is demand,
    /// sends it, and ends the stream once nothing is left and the store stopped.
    private func drain() {
        while true {
            let step = lock.withLock { () -> Step in
                guard let downstream else { return .stop }
                if !ready.isEmpty {
                    guard demand > 0 else { return .stop }
                    demand -= 1
                    return .send(downstream, ready.removeFirst())
                }
                if demand == 0 { return .stop }
                if readsLog {
                    // The live change sets take over once they follow on from `last`: the log
                    // need not be read again, nor can it be once the store has closed.
                    live.removeAll { $0.sequence <= last.sequence && !$0.isRewound }
                    guard tokenChecked, let first = live.first, first.sequence == last.sequence + 1, first.isComplete, !first.isRewound,
                          !first.isExternal else {
                        return .readLog(last)
                    }
                    readsLog = false
                }
                takeLiveLocked()
                if !ready.isEmpty || readsLog { return .again }
                if let ended {
                    self.downstream = nil
                    return .finish(downstream, ended)
                }
                return .stop
            }
            switch step {
            case .stop:
                return
            case .again:
                continue
            case let .send(target, changeSet):
                let more = target.receive(changeSet)
                lock.withLock { demand += more }
            case let .readLog(after):
                do {
                    let batch = try store.history(after: after, limit: 1000)
                    lock.withLock {
                        guard downstream != nil, last == after else { return }
                        tokenChecked = true
                        if let end = batch.last?.token {
                            ready += batch
                            last = end
                        } else {
                            readsLog = false
                        }
                    }
                } catch {
                    let target = lock.withLock { () -> Downstream? in
                        defer { downstream = nil }
                        return downstream
                    }
                    target?.receive(completion: .failure(error))
                    lock.withLock { upstream = nil }
                    return
                }
            case let .finish(target, error):
                target.receive(completion: .failure(error))
                lock.withLock { upstream = nil }
                return
            }
        }
    }

    /// Moves the live change sets that follow `last` into `ready`; a gap, a stretch the store
    /// lost track of, or a rewound history switches back to the log, which says exactly what
    /// came after `last` or that it no longer can.
    private func takeLiveLocked() {
        while !live.isEmpty {
            let changeSet = live.removeFirst()
            if changeSet.sequence <= last.sequence && !changeSet.isRewound { continue }  // sent already
            // A rewound change set is never complete. Another process's change set is only a
            // wake-up: it was read from the log in a later snapshot and lacks the inserts and
            // updates of records a later commit deleted (it carries rows, and those are gone).
            guard changeSet.sequence == last.sequence + 1, changeSet.isComplete, !changeSet.isExternal else {
                readsLog = true
                live.removeAll()
                return
            }
            let converted = HistoryChangeSet(
                token: changeSet.historyToken,
                changes: changeSet.logEntries.map { HistoryChangeSet.Change(entity: $0.entity, id: $0.id, kind: $0.kind) })
            ready.append(converted)
            last = converted.token
        }
    }

    private enum Step {
        case stop
        case again
        case send(Downstream, HistoryChangeSet)
        case readLog(HistoryToken)
        case finish(Downstream, any Error)
    }
}
