import OpenCombineShim

extension Store {
    /// A live fetch: the request's results as a stream of `CollectionDifference`s.
    ///
    ///     store.differencesPublisher(for: FetchRequest<Todo>(where: \.done == false, sortBy: [.descending(\.priority)]))
    ///         .applyingChanges([TodoRow]()) { TodoRow($0) }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { rows = $0 })
    ///
    /// Each subscriber fetches when it attaches and keeps its own results. The first value
    /// inserts the whole current result into an empty list; after that, one difference per
    /// commit that changed the result (never an empty one), against what that subscriber
    /// last received. While a subscriber has no demand, changes pile up and arrive as one
    /// difference when it asks. Applying every difference in order to `[]` gives exactly
    /// what `fetch(request)` returns.
    ///
    /// Where values arrive: made in main-actor code (`isolation` defaults to the caller's), on
    /// the main actor, so a `sink` written there is safe whoever commits: a commit made on the
    /// main actor arrives before its `write` returns, others' commits (another thread, store
    /// or process) in order in blocks on the main queue. Made anywhere else, on the
    /// committing thread before that `write` returns, or the store's own thread for other
    /// stores' and processes' commits. Pass `isolation: nil` to get the latter from main-actor
    /// code too; ``Publisher/receiveOnMainActor()`` moves any publisher to the main actor.
    /// Every fetch publisher of the store follows this rule.
    public func differencesPublisher<T: Storable>(
        for request: FetchRequest<T>, isolation: (any Actor)? = #isolation
    ) -> FetchedDifferencesPublisher<T> {
        FetchedDifferencesPublisher(store: self, request: request, deliversOnMainActor: isMainActor(isolation))
    }
}

/// The publisher ``Store/differencesPublisher(for:)`` returns.
public struct FetchedDifferencesPublisher<T: Storable>: Publisher, MainActorDelivering {
    /// Each difference from the results last sent to the results now.
    public typealias Output = CollectionDifference<T>
    /// The error a failing fetch or an undecodable row completes with.
    public typealias Failure = any Error

    /// The store whose results are observed.
    public let store: Store
    /// The request whose results are observed.
    public let request: FetchRequest<T>
    /// Whether values arrive on the main actor (the publisher was made in main-actor code).
    var deliversOnMainActor = false

    /// Attaches `subscriber`: fetches now, then sends one difference per commit that changes the results.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if hopsToMainActor(subscriber) { return }
        LiveSubscription<DifferenceOutput<T>, S>.attach(subscriber, to: store, request: request, output: DifferenceOutput())
    }
}
