import OpenCombineShim

extension Store {
    /// A live fetch as identity-based ``ResultsChange``s, for table and collection views:
    /// per commit, the deleted, inserted, moved and updated records with their positions.
    /// The first value inserts every record. Demand rules are those of
    /// ``changesPublisher(for:)``: coalesced changes arrive as one ``ResultsChange``
    /// against the list last sent.
    public func resultsChangesPublisher<T: Storable>(for request: FetchRequest<T>) -> FetchedResultsChangesPublisher<T> {
        FetchedResultsChangesPublisher(store: self, request: request)
    }
}

/// The publisher ``Store/resultsChangesPublisher(for:)`` returns.
public struct FetchedResultsChangesPublisher<T: Storable>: Publisher {
    public typealias Output = ResultsChange<T>
    public typealias Failure = any Error

    public let store: Store
    public let request: FetchRequest<T>

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        LiveSubscription<ResultsChangeOutput<T>, S>.attach(subscriber, to: store, request: request, output: ResultsChangeOutput())
    }
}

/// The former name of ``FetchedResultsChangesPublisher``, kept so existing code compiles.
@available(*, deprecated, renamed: "FetchedResultsChangesPublisher")
public typealias ResultsChangesPublisher = FetchedResultsChangesPublisher
