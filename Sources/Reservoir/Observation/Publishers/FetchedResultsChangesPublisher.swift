import OpenCombineShim

extension Store {
    /// A live fetch as identity-based ``ResultsChange``s, for table and collection views:
    /// per commit, the deleted, inserted, moved and updated records with their positions.
    /// The first value inserts every record. Demand rules are those of
    /// ``differencesPublisher(for:)``: coalesced changes arrive as one ``ResultsChange``
    /// against the list last sent.
    public func resultsChangesPublisher<T: Storable>(
        for request: FetchRequest<T>, isolation: (any Actor)? = #isolation
    ) -> FetchedResultsChangesPublisher<T> {
        FetchedResultsChangesPublisher(store: self, request: request, deliversOnMainActor: isMainActor(isolation))
    }
}

/// The publisher ``Store/resultsChangesPublisher(for:)`` returns.
public struct FetchedResultsChangesPublisher<T: Storable>: Publisher, MainActorDelivering {
    /// Each change by position, from the results last sent to the results now.
    public typealias Output = ResultsChange<T>
    /// The error a failing fetch or an undecodable row completes with.
    public typealias Failure = any Error

    /// The store whose results are observed.
    public let store: Store
    /// The request whose results are observed.
    public let request: FetchRequest<T>
    /// Whether values arrive on the main actor (the publisher was made in main-actor code).
    var deliversOnMainActor = false

    /// Attaches `subscriber`: fetches now, then sends one change per commit that changes the results.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if hopsToMainActor(subscriber) { return }
        LiveSubscription<ResultsChangeOutput<T>, S>.attach(subscriber, to: store, request: request, output: ResultsChangeOutput())
    }
}

/// The former name of ``FetchedResultsChangesPublisher``, kept so existing code compiles.
@available(*, deprecated, renamed: "FetchedResultsChangesPublisher")
public typealias ResultsChangesPublisher = FetchedResultsChangesPublisher
