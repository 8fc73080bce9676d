import Foundation
import OpenCombineShim
import Reservoir

/// A subscriber that records every value and the completion, asking for demand as told:
/// an initial request, and what `receive` returns per value. It may run a reaction inside
/// `receive` (to write or cancel re-entrantly).
final class LiveRecorder<Input>: Subscriber, @unchecked Sendable {
    typealias Failure = any Error
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var subscription: (any Subscription)?
    private var recorded: [Input] = []
    private var finished: Subscribers.Completion<any Error>?
    private let initialDemand: Subscribers.Demand
    private let demandPerValue: Subscribers.Demand
    var reaction: ((Input, LiveRecorder<Input>) -> Void)?

    init(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none) {
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    var values: [Input] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    var completion: Subscribers.Completion<any Error>? {
        lock.lock()
        defer { lock.unlock() }
        return finished
    }

    /// The subscription while subscribed, for checking it is released after cancel.
    var currentSubscription: AnyObject? {
        lock.lock()
        defer { lock.unlock() }
        return subscription.map { $0 as AnyObject }
    }

    func receive(subscription: any Subscription) {
        lock.lock()
        self.subscription = subscription
        lock.unlock()
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        lock.lock()
        recorded.append(input)
        let reaction = self.reaction
        lock.unlock()
        reaction?(input, self)
        return demandPerValue
    }

    func receive(completion: Subscribers.Completion<any Error>) {
        lock.lock()
        finished = completion
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

extension LiveRecorder where Input == CollectionDifference<Item> {
    /// Every recorded difference applied in order to an empty list.
    var applied: [Item] {
        values.reduce([Item]()) { list, difference in list.applying(difference) ?? [] }
    }
}
