import Observation

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension Store {
    /// A fetch request's results grouped into sections by `key`, as an `@Observable` object
    /// on the main actor: see ``LiveSections``.
    @MainActor
    public func liveSections<T: Storable, Key: ValueConvertible>(_ request: FetchRequest<T>, by key: KeyPath<T, Key>) -> LiveSections<T, Key> {
        LiveSections(store: self, request: request, by: key)
    }
}

/// A fetch request's results grouped into sections, kept current and observable: the
/// observable form of ``Store/sectionedChangesPublisher(for:by:)``, for sectioned SwiftUI lists.
///
///     ForEach(channels.sections, id: \.key) { section in
///         Section(section.key) { ForEach(section.records) { Text($0.text) } }
///     }   // channels = store.liveSections(FetchRequest<Message>(sortBy: [.ascending(\.channel)]), by: \.channel)
///
/// `key` must be the request's first sort key, or ``error`` is set at once. Isolation and
/// lifetime are those of ``LiveQuery``; ``lastChange`` keeps the latest change for views
/// that animate section and row changes themselves.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class LiveSections<T: Storable, Key: ValueConvertible> {
    /// The sections, in the request's order, each with its records. Every change the store
    /// reports notifies observers, as ``LiveQuery/elements`` does.
    public var sections: [ResultsSection<Key, T>] {
        access(keyPath: \.sections)
        return storedSections
    }
    @ObservationIgnored private var storedSections: [ResultsSection<Key, T>] = []
    /// The change that produced ``sections`` (the first one inserts every section).
    public private(set) var lastChange: SectionedResultsChange<Key, T>?
    /// Whether the first sections have yet to arrive.
    public private(set) var isLoading = true
    /// Why observing stopped, if it did.
    public private(set) var error: (any Error)?

    /// The request observed.
    @ObservationIgnored public let request: FetchRequest<T>
    @ObservationIgnored private let feed: MainActorFeed<SectionedResultsChange<Key, T>>

    /// Starts observing `request` grouped by `key`; the same as `store.liveSections(request, by: key)`.
    public init(store: Store, request: FetchRequest<T>, by key: KeyPath<T, Key>) {
        self.request = request
        let box = WeakBox<LiveSections<T, Key>>()
        feed = MainActorFeed(onValue: { box.object?.receive($0) }, onFailure: { box.object?.stop($0) })
        box.object = self
        store.sectionedChangesPublisher(for: request, by: key, isolation: nil).subscribe(feed)
    }

    deinit {
        feed.cancel()
    }

    /// Stops observing; ``sections`` keeps the last value.
    public func cancel() {
        feed.cancel()
    }

    private func receive(_ change: SectionedResultsChange<Key, T>) {
        withMutation(keyPath: \.sections) { storedSections = change.sections }
        lastChange = change
        if isLoading { isLoading = false }
    }

    private func stop(_ error: any Error) {
        self.error = error
        if isLoading { isLoading = false }
    }
}
