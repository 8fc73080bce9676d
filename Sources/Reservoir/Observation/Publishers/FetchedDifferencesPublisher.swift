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
    /// what `fetch(request)` returns. Values arrive on the committing thread, before that
    /// `write` returns.
    public func differencesPublisher<T: Storable>(for request: FetchRequest<T>) -> FetchedDifferencesPublisher<T> {
        FetchedDifferencesPublisher(store: self, request: request)
    }
}

/// The publisher ``Store/differencesPublisher(for:)`` returns.
public struct FetchedDifferencesPublisher<T: Storable>: Publisher {
    /// Each difference from the results last sent to the results now.
    public typealias Output = CollectionDifference<T>
    /// The error a failing fetch or an undecodable row completes with.
    public typealias Failure = any Error

    /// The store whose results are observed.
    public let store: Store
    /// The request whose results are observed.
    public let request: FetchRequest<T>

    /// Attaches `subscriber`: fetches now, then sends one difference per commit that changes the results.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        LiveSubscription<DifferenceOutput<T>, S>.attach(subscriber, to: store, request: request, output: DifferenceOutput())
    }
}
