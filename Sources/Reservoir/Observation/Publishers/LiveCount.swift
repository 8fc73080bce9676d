import Observation

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension Store {
    /// How many records a fetch request selects, as an `@Observable` object on the main
    /// actor: see ``LiveCount``.
    @MainActor
    public func liveCount<T: Storable>(_ request: FetchRequest<T>) -> LiveCount<T> {
        LiveCount(store: self, request: request)
    }
}

/// How many records a fetch request selects (after its limit and offset), kept current and
/// observable: a badge, a "12 unread" label. Observers are told only when the number changes.
///
///     Text("\(unread.count) unread")      // unread = store.liveCount(FetchRequest<Message>(where: \.read == false))
///
/// Built on ``Store/countPublisher(for:)``; isolation and lifetime are those of ``LiveQuery``.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class LiveCount<T: Storable> {
    /// The current count.
    public private(set) var count = 0
    /// Whether the first count has yet to arrive.
    public private(set) var isLoading = true
    /// Why observing stopped, if it did.
    public private(set) var error: (any Error)?

    /// The request counted.
    @ObservationIgnored public let request: FetchRequest<T>
    @ObservationIgnored private let feed: MainActorFeed<Int>

    /// Starts counting `request` on `store`; the same as `store.liveCount(request)`.
    public init(store: Store, request: FetchRequest<T>) {
        self.request = request
        let box = WeakBox<LiveCount<T>>()
        feed = MainActorFeed(onValue: { box.object?.receive($0) }, onFailure: { box.object?.stop($0) })
        box.object = self
        store.countPublisher(for: request, isolation: nil).subscribe(feed)
    }

    deinit {
        feed.cancel()
    }

    /// Stops observing; ``count`` keeps the last value.
    public func cancel() {
        feed.cancel()
    }

    private func receive(_ count: Int) {
        if count != self.count { self.count = count }
        if isLoading { isLoading = false }
    }

    private func stop(_ error: any Error) {
        self.error = error
        if isLoading { isLoading = false }
    }
}
