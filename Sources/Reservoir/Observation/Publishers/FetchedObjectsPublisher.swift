import OpenCombineShim

extension Store {
    /// A live fetch as whole arrays: the current results when a subscriber attaches, then
    /// the new results after each commit that changed them. Demand rules are those of
    /// ``differencesPublisher(for:)``: with no demand, only the latest array is sent later.
    public func objectsPublisher<T: Storable>(
        for request: FetchRequest<T>, isolation: (any Actor)? = #isolation
    ) -> FetchedObjectsPublisher<T> {
        FetchedObjectsPublisher(store: self, request: request, deliversOnMainActor: isMainActor(isolation))
    }
}

/// The publisher ``Store/objectsPublisher(for:)`` returns.
public struct FetchedObjectsPublisher<T: Storable>: Publisher, MainActorDelivering {
    /// The whole results after each change.
    public typealias Output = [T]
    /// The error a failing fetch or an undecodable row completes with.
    public typealias Failure = any Error

    /// The store whose results are observed.
    public let store: Store
    /// The request whose results are observed.
    public let request: FetchRequest<T>
    /// Whether values arrive on the main actor (the publisher was made in main-actor code).
    var deliversOnMainActor = false

    /// Attaches `subscriber`: fetches now, then sends the results after every commit that changes them.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if hopsToMainActor(subscriber) { return }
        LiveSubscription<ObjectsOutput<T>, S>.attach(subscriber, to: store, request: request, output: ObjectsOutput())
    }
}
