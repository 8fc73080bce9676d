import Foundation
import OpenCombineShim

// MARK: - Where values arrive
//
// A store delivers on the thread that committed (before that `write` returns) or, for other
// stores' and processes' commits, on the store's own thread. A Swift 6 closure formed in
// main-actor code (top-level code, a view model) is main-actor isolated, and the runtime
// traps when anything else calls it; Combine's `sink` takes such closures without a word.
// So the store's publishers remember the isolation they were made in: made in main-actor
// code, they deliver on the main actor (at once for a commit made there, else queued on the
// main queue in order). Anything else can ask for that with ``Publisher/receiveOnMainActor()``.

extension Publisher {
    /// This publisher's subscription, values and completion delivered on the main actor, in
    /// order: at once when they are sent on the main actor with nothing queued ahead of them
    /// (a commit made in main-actor code reaches its subscriber before `write` returns),
    /// otherwise in a block queued on the main queue. Demand is passed through unchanged.
    ///
    ///     store.changeSets.receiveOnMainActor()
    ///         .sink { changeSet in model.lastSequence = changeSet.sequence }   // safe from main-actor code
    ///
    /// The store's own fetch publishers (`differencesPublisher(for:)` and the rest) do this
    /// by themselves when they are made in main-actor code; `changeSets`, a property, cannot
    /// tell, so main-actor code subscribing to it uses this.
    public func receiveOnMainActor() -> MainActorPublisher<Self> {
        MainActorPublisher(upstream: self)
    }
}

/// The publisher ``Publisher/receiveOnMainActor()`` returns.
public struct MainActorPublisher<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher whose output is moved to the main actor.
    public let upstream: Upstream

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        upstream.subscribe(MainActorDelivery(downstream: subscriber))
    }
}

/// Whether `isolation` (a caller's `#isolation`) is the main actor.
func isMainActor(_ isolation: (any Actor)?) -> Bool {
    guard let isolation else { return false }
    return (isolation as AnyObject) === MainActor.shared
}

/// A store publisher that delivers on the main actor when it was made in main-actor code.
protocol MainActorDelivering: Publisher {
    /// Set by the factory when its caller was isolated to the main actor.
    var deliversOnMainActor: Bool { get set }
}

extension MainActorDelivering {
    /// When this publisher delivers on the main actor, subscribes `subscriber` through a hop
    /// to it and returns true; otherwise returns false and the caller attaches it directly.
    func hopsToMainActor<S: Subscriber>(_ subscriber: S) -> Bool where S.Input == Output, S.Failure == Failure {
        guard deliversOnMainActor else { return false }
        var direct = self
        direct.deliversOnMainActor = false
        direct.subscribe(MainActorDelivery(downstream: subscriber))
        return true
    }
}

/// The subscriber between a publisher and a downstream that must run on the main actor.
final class MainActorDelivery<Downstream: Subscriber>: Subscriber, Subscription, @unchecked Sendable {
    typealias Input = Downstream.Input
    typealias Failure = Downstream.Failure

    // @unchecked: `downstream`, `upstream` and `queued` are guarded by `lock`; the downstream is
    // only called on the main queue, outside the lock.
    /// Guards `downstream`, `upstream` and `queued`. A leaf in the store's lock order (see
    /// ``ChangeHub``): nothing is taken under it.
    private let lock = NSLock()
    private var downstream: Downstream?
    private var upstream: (any Subscription)?
    /// Blocks queued on the main queue and not yet run: while there are any, a value sent on
    /// the main actor queues behind them instead of overtaking them.
    private var queued = 0

    /// A value moved to the main queue; the downstream takes it there alone.
    private struct Carried<Value>: @unchecked Sendable {
        let value: Value
    }

    init(downstream: Downstream) {
        self.downstream = downstream
    }

    func receive(subscription: any Subscription) {
        lock.lock()
        upstream = subscription
        lock.unlock()
        onMain { downstream in downstream.receive(subscription: self) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        let carried = Carried(value: input)
        let now = onMain({ downstream in downstream.receive(carried.value) }, later: { more in
            if more > 0 { self.request(more) }
        })
        return now ?? .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        onMain { downstream in
            self.lock.lock()
            self.downstream = nil
            self.upstream = nil
            self.lock.unlock()
            downstream.receive(completion: completion)
        }
    }

    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        let upstream = self.upstream
        lock.unlock()
        upstream?.request(demand)
    }

    func cancel() {
        lock.lock()
        let upstream = self.upstream
        self.upstream = nil
        downstream = nil
        lock.unlock()
        upstream?.cancel()
    }

    /// Runs `body` with the downstream on the main queue: now when on it with nothing queued
    /// ahead, returning its result; else queued behind what is, handing its result to `later`
    /// there, and returning nil.
    @discardableResult
    private func onMain<R>(_ body: @escaping (Downstream) -> R, later: @escaping (R) -> Void = { _ in }) -> R? {
        lock.lock()
        if MainQueue.isCurrent, queued == 0, let downstream {
            lock.unlock()
            return body(downstream)
        }
        queued += 1
        lock.unlock()
        let carried = Carried(value: (body, later))
        DispatchQueue.main.async {
            self.lock.lock()
            self.queued -= 1
            let downstream = self.downstream
            self.lock.unlock()
            if let downstream { carried.value.1(carried.value.0(downstream)) }
        }
        return nil
    }
}
