import Foundation
import OpenCombineShim
import Reservoir

/// A subscriber that records every value and the completion, asking for demand as told:
/// an initial request, and what `receive` returns per value. It may run a reaction inside
/// `receive` (to write or cancel re-entrantly).
public final class LiveRecorder<Input>: Subscriber, @unchecked Sendable {
    /// Any error: the publishers recorded fail with `ReservoirError`s.
    public typealias Failure = any Error
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var subscription: (any Subscription)?
    private var recorded: [Input] = []
    private var finished: Subscribers.Completion<any Error>?
    private var completions = 0
    private let initialDemand: Subscribers.Demand
    private let demandPerValue: Subscribers.Demand
    /// Run inside `receive` for each value, after recording it (to write or cancel re-entrantly);
    /// set before subscribing.
    public var reaction: ((Input, LiveRecorder<Input>) -> Void)?

    /// A recorder asking for `initialDemand` when subscribed and `demandPerValue` more per value.
    public init(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none) {
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    /// The values received so far, in order.
    public var values: [Input] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    /// The completion, once received.
    public var completion: Subscribers.Completion<any Error>? {
        lock.lock()
        defer { lock.unlock() }
        return finished
    }

    /// How many completions arrived: a publisher sends at most one.
    public var completionCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return completions
    }

    /// The subscription while subscribed, for checking it is released after cancel.
    public var currentSubscription: AnyObject? {
        lock.lock()
        defer { lock.unlock() }
        return subscription.map { $0 as AnyObject }
    }

    /// Keeps the subscription and asks for the initial demand.
    public func receive(subscription: any Subscription) {
        lock.lock()
        self.subscription = subscription
        lock.unlock()
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    /// Records `input`, runs the reaction, and asks for `demandPerValue` more.
    public func receive(_ input: Input) -> Subscribers.Demand {
        lock.lock()
        recorded.append(input)
        let reaction = self.reaction
        lock.unlock()
        reaction?(input, self)
        return demandPerValue
    }

    /// Records the completion.
    public func receive(completion: Subscribers.Completion<any Error>) {
        lock.lock()
        finished = completion
        completions += 1
        lock.unlock()
    }

    /// Asks the subscription for `demand` more values.
    public func request(_ demand: Subscribers.Demand) {
        lock.lock()
        let subscription = self.subscription
        lock.unlock()
        subscription?.request(demand)
    }

    /// Cancels the subscription and lets it go.
    public func cancel() {
        lock.lock()
        let subscription = self.subscription
        self.subscription = nil
        lock.unlock()
        subscription?.cancel()
    }
}

extension LiveRecorder where Input == CollectionDifference<Item> {
    /// Every recorded difference applied in order to an empty list.
    var applied: [Item] {
        values.reduce([Item]()) { list, difference in list.applying(difference) ?? [] }
    }
}
