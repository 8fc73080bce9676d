import OpenCombineShim

extension Store {
    /// ``differencesPublisher(for:)`` as an async sequence: `for try await difference in store.differences(for: request)`.
    /// Each `next()` asks for one value, so changes made while the loop body runs arrive
    /// coalesced into one difference; cancelling the task ends the subscription.
    public func differences<T: Storable>(for request: FetchRequest<T>) -> AsyncThrowingPublisher<FetchedDifferencesPublisher<T>> {
        differencesPublisher(for: request, isolation: nil).values
    }

    /// ``objectsPublisher(for:)`` as an async sequence of arrays.
    public func objects<T: Storable>(for request: FetchRequest<T>) -> AsyncThrowingPublisher<FetchedObjectsPublisher<T>> {
        objectsPublisher(for: request, isolation: nil).values
    }
}
