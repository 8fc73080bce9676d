import OpenCombineShim

extension Store {
    /// A live count: how many records `request` selects (after its limit and offset, as
    /// ``count(_:)`` counts), when a subscriber attaches and then after each commit that
    /// changed the number. Commits that change which records match but not how many send
    /// nothing. Demand rules are those of ``differencesPublisher(for:)``: with no demand, only
    /// the latest count is sent later, and only if it differs from the one last sent.
    ///
    ///     let unread = store.countPublisher(for: FetchRequest<Message>(where: \.read == false))
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { badge = $0 })
    public func countPublisher<T: Storable>(
        for request: FetchRequest<T>, isolation: (any Actor)? = #isolation
    ) -> FetchedCountPublisher<T> {
        FetchedCountPublisher(store: self, request: request, deliversOnMainActor: isMainActor(isolation))
    }

    /// ``countPublisher(for:)`` as an async sequence of counts.
    public func counts<T: Storable>(for request: FetchRequest<T>) -> AsyncThrowingPublisher<FetchedCountPublisher<T>> {
        countPublisher(for: request, isolation: nil).values
    }
}

/// The publisher ``Store/countPublisher(for:)`` returns.
public struct FetchedCountPublisher<T: Storable>: Publisher, MainActorDelivering {
    public typealias Output = Int
    public typealias Failure = any Error

    /// The store observed.
    public let store: Store
    /// The request whose results are counted.
    public let request: FetchRequest<T>
    /// Whether values arrive on the main actor (the publisher was made in main-actor code).
    var deliversOnMainActor = false

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if hopsToMainActor(subscriber) { return }
        LiveSubscription<CountOutput<T>, S>.attach(subscriber, to: store, request: request, output: CountOutput())
    }
}
