import Observation

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension Store {
    /// A fetch request's results as an `@Observable` object on the main actor, for SwiftUI
    /// views and view models: see ``LiveQuery``.
    @MainActor
    public func live<T: Storable>(_ request: FetchRequest<T>) -> LiveQuery<T> {
        LiveQuery(store: self, request: request)
    }
}

/// A fetch request's results, kept current and observable: SwiftUI views and anything
/// using the Observation framework read ``elements`` and re-render when a commit changes them.
///
///     @MainActor @Observable final class InboxModel {
///         let messages: LiveQuery<Message>
///         init(store: Store) {
///             messages = store.live(FetchRequest(where: \.channel == "general", sortBy: [.ascending(\.sent)]))
///         }
///     }
///     // In a view: ForEach(model.messages.elements) { Text($0.text) }
///
/// **Isolation.** The object lives on the main actor, where UI code reads it, and the
/// compiler checks every access. A commit made on the main actor is applied before `write`
/// returns (unless a change from another thread is still on its way to the main queue:
/// then both arrive together, in that block); commits from other threads and processes are
/// applied in a block on the main queue. While the main actor is busy, further commits are
/// coalesced into one update.
/// Code that wants results on another actor or queue uses ``Store/objectsPublisher(for:)``
/// with `receive(on:)` or ``Store/objects(for:)``.
///
/// **Lifetime.** Built on the same subscription as ``Store/objectsPublisher(for:)``: the
/// fetch runs when the object is made (so on the main actor ``isLoading`` is already false
/// after `live(_:)` returns, unless it failed). It observes until ``cancel()`` or until it
/// is released. A failing fetch or a store that stops sets ``error`` and stops observing;
/// ``elements`` keeps the last results.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class LiveQuery<T: Storable> {
    /// The request's current results, in its order.
    ///
    /// Observers are told of every change the store reports, even one Swift's `==` cannot
    /// see: `@Observable` skips notifying when an `Equatable` value is set to an equal one,
    /// and `String`'s `==` is Unicode equivalence, while the store keeps (and reports a change
    /// of) exact bytes, `"e\u{301}"` to `"\u{e9}"` say. So the results are stored apart and
    /// every reported change notifies.
    public var elements: [T] {
        access(keyPath: \.elements)
        return storedElements
    }
    @ObservationIgnored private var storedElements: [T] = []
    /// Whether the first results have yet to arrive.
    public private(set) var isLoading = true
    /// Why observing stopped, if it did.
    public private(set) var error: (any Error)?

    /// The number of ``elements``.
    public var count: Int { elements.count }

    /// The request observed.
    @ObservationIgnored public let request: FetchRequest<T>
    @ObservationIgnored private let feed: MainActorFeed<[T]>

    /// Starts observing `request` on `store`; the same as `store.live(request)`.
    public init(store: Store, request: FetchRequest<T>) {
        self.request = request
        let box = WeakBox<LiveQuery<T>>()
        feed = MainActorFeed(onValue: { box.object?.receive($0) }, onFailure: { box.object?.stop($0) })
        box.object = self
        store.objectsPublisher(for: request, isolation: nil).subscribe(feed)
    }

    deinit {
        feed.cancel()
    }

    /// Stops observing; ``elements`` keeps the last results.
    public func cancel() {
        feed.cancel()
    }

    private func receive(_ records: [T]) {
        withMutation(keyPath: \.elements) { storedElements = records }
        if isLoading { isLoading = false }
    }

    private func stop(_ error: any Error) {
        self.error = error
        if isLoading { isLoading = false }
    }
}

/// A weak reference the main actor reads, so a feed's handlers do not keep their object alive.
@MainActor
final class WeakBox<Object: AnyObject>: Sendable {
    weak var object: Object?
    nonisolated init() {}
}
