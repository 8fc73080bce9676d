import OpenCombineShim

/// The names the observation API had before they said what each stream carries
/// (`changes` was both the raw change sets and a fetch's differences). They forward
/// to the new names and carry a fix-it, so existing code keeps compiling with a warning.
extension Store {
    /// Renamed ``changeSets``: every raw ``ChangeSet``.
    @available(*, deprecated, renamed: "changeSets")
    public var changes: ChangeSetPublisher { changeSets }

    /// Renamed ``differences(for:)``: a fetch's differences as an async sequence.
    @available(*, deprecated, renamed: "differences(for:)")
    public func changes<T: Storable>(for request: FetchRequest<T>) -> AsyncThrowingPublisher<FetchedDifferencesPublisher<T>> {
        differences(for: request)
    }

    /// Renamed ``differencesPublisher(for:)``: a fetch's differences as a publisher.
    @available(*, deprecated, renamed: "differencesPublisher(for:)")
    public func changesPublisher<T: Storable>(
        for request: FetchRequest<T>, isolation: (any Actor)? = #isolation
    ) -> FetchedDifferencesPublisher<T> {
        differencesPublisher(for: request, isolation: isolation)
    }
}

/// Renamed ``FetchedDifferencesPublisher``.
@available(*, deprecated, renamed: "FetchedDifferencesPublisher")
public typealias FetchedChangesPublisher<T: Storable> = FetchedDifferencesPublisher<T>
