import OpenCombineShim

extension Store {
    /// ``changesPublisher(for:)`` as an async sequence: `for try await difference in store.changes(for: request)`.
    /// Each `next()` asks for one value, so changes made while the loop body runs arrive
    /// coalesced into one difference; cancelling the task ends the subscription.
    public func changes<T: Storable>(for request: FetchRequest<T>) -> AsyncThrowingPublisher<FetchedChangesPublisher<T>> {
        changesPublisher(for: request).values
    }

    /// ``objectsPublisher(for:)`` as an async sequence of arrays.
    public func objects<T: Storable>(for request: FetchRequest<T>) -> AsyncThrowingPublisher<FetchedObjectsPublisher<T>> {
        objectsPublisher(for: request).values
    }
}
