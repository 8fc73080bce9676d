import OpenCombineShim

extension Store {
    /// A live fetch as whole arrays: the current results when a subscriber attaches, then
    /// the new results after each commit that changed them. Demand rules are those of
    /// ``changesPublisher(for:)``: with no demand, only the latest array is sent later.
    public func objectsPublisher<T: Storable>(for request: FetchRequest<T>) -> FetchedObjectsPublisher<T> {
        FetchedObjectsPublisher(store: self, request: request)
    }
}

/// The publisher ``Store/objectsPublisher(for:)`` returns.
public struct FetchedObjectsPublisher<T: Storable>: Publisher {
    public typealias Output = [T]
    public typealias Failure = any Error

    public let store: Store
    public let request: FetchRequest<T>

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        LiveSubscription<ObjectsOutput<T>, S>.attach(subscriber, to: store, request: request, output: ObjectsOutput())
    }
}
