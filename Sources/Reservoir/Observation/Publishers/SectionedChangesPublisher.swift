import OpenCombineShim

extension Store {
    /// A live fetch grouped into sections by `key`, as NSFetchedResultsController gives them:
    /// the first value holds every section (all inserted); after that, one
    /// ``SectionedResultsChange`` per commit that changed the results, with the sections
    /// and records inserted, deleted, moved and updated by the convention documented there.
    ///
    ///     store.sectionedChangesPublisher(for: FetchRequest<Message>(sortBy: [.ascending(\.channel), .ascending(\.sent)]),
    ///                                     by: \.channel)
    ///
    /// `key` must be the request's first sort key (either direction), so each key's records
    /// are contiguous; otherwise the subscription fails with `.invalidQuery` naming both.
    /// Records fall into the same section when their stored key values are equal in the
    /// contract's order (text byte-wise). Demand rules are those of ``differencesPublisher(for:)``.
    public func sectionedChangesPublisher<T: Storable, Key: ValueConvertible>(
        for request: FetchRequest<T>, by key: KeyPath<T, Key>, isolation: (any Actor)? = #isolation
    ) -> SectionedChangesPublisher<T, Key> {
        SectionedChangesPublisher(store: self, request: request, key: key, deliversOnMainActor: isMainActor(isolation))
    }
}

/// The publisher ``Store/sectionedChangesPublisher(for:by:)`` returns.
public struct SectionedChangesPublisher<T: Storable, Key: ValueConvertible>: Publisher, MainActorDelivering {
    public typealias Output = SectionedResultsChange<Key, T>
    public typealias Failure = any Error

    /// The store observed.
    public let store: Store
    /// The request whose results are grouped.
    public let request: FetchRequest<T>
    /// The section key: the request's first sort key.
    public let key: KeyPath<T, Key>
    /// Whether values arrive on the main actor (the publisher was made in main-actor code).
    var deliversOnMainActor = false

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if hopsToMainActor(subscriber) { return }
        LiveSubscription<SectionsOutput<T, Key>, S>.attach(subscriber, to: store, request: request, output: SectionsOutput(keyPath: key))
    }
}
