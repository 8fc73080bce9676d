import Foundation
import OpenCombineShim

/// Hands a live publisher's values to the main actor, one at a time: the subscriber behind
/// ``LiveQuery`` and ``LiveCount``.
///
/// It asks for one value, and for the next only once the main actor has taken it, so
/// while the main actor is busy the subscription coalesces commits into one value instead
/// of queueing a value per commit. A value sent while the main actor runs (a commit made
/// there) is taken at once, so `write` followed by a read of the observable sees the commit
/// (unless a value is already in flight: the commit then comes with the next one); a value
/// sent elsewhere is taken in a block queued on the main queue, which keeps order because
/// only one value is ever in flight.
final class MainActorFeed<Value: Sendable>: Subscriber, Cancellable, @unchecked Sendable {
    typealias Input = Value
    typealias Failure = any Error

    // @unchecked: `subscription` and `isCancelled` are guarded by `lock`; the handlers are
    // immutable and main-actor isolated.
    /// Guards `subscription` and `isCancelled`. A leaf in the store's lock order (see
    /// ``ChangeHub``): nothing is taken under it.
    private let lock = NSLock()
    private var subscription: (any Subscription)?
    private var isCancelled = false
    private let onValue: @MainActor @Sendable (Value) -> Void
    private let onFailure: @MainActor @Sendable (any Error) -> Void

    init(onValue: @escaping @MainActor @Sendable (Value) -> Void, onFailure: @escaping @MainActor @Sendable (any Error) -> Void) {
        self.onValue = onValue
        self.onFailure = onFailure
    }

    func receive(subscription: any Subscription) {
        lock.lock()
        guard !isCancelled else {
            lock.unlock()
            return subscription.cancel()
        }
        self.subscription = subscription
        lock.unlock()
        subscription.request(.max(1))
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        if MainQueue.isCurrent {
            MainActor.assumeIsolated { take(input) }
            return .max(1)
        }
        DispatchQueue.main.async {
            MainActor.assumeIsolated { self.take(input) }
            self.requestNext()
        }
        return .none
    }

    func receive(completion: Subscribers.Completion<any Error>) {
        guard case let .failure(error) = completion else { return }
        if MainQueue.isCurrent {
            MainActor.assumeIsolated { fail(error) }
        } else {
            DispatchQueue.main.async { MainActor.assumeIsolated { self.fail(error) } }
        }
    }

    func cancel() {
        lock.lock()
        isCancelled = true
        let subscription = self.subscription
        self.subscription = nil
        lock.unlock()
        subscription?.cancel()
    }

    // MARK: - On the main actor

    private var cancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return isCancelled
    }

    @MainActor private func take(_ value: Value) {
        if !cancelled { onValue(value) }
    }

    @MainActor private func fail(_ error: any Error) {
        if !cancelled { onFailure(error) }
    }

    private func requestNext() {
        lock.lock()
        let subscription = self.subscription
        lock.unlock()
        subscription?.request(.max(1))
    }
}

/// Whether code runs on the main queue, which is where the main actor runs its jobs (on
/// Apple platforms and with Linux's dispatch-based executor). Not `Thread.isMainThread`:
/// after `dispatch_main()`, which an async `main` calls on Linux, the main queue is drained
/// by worker threads, and main-actor code runs off the main thread.
enum MainQueue {
    private final class Marker: @unchecked Sendable {
        // @unchecked: the key is an immutable token, set once on the main queue in `init`.
        let key = DispatchSpecificKey<UInt8>()
        init() { DispatchQueue.main.setSpecific(key: key, value: 1) }
    }

    private static let marker = Marker()

    static var isCurrent: Bool { DispatchQueue.getSpecific(key: marker.key) != nil }
}
