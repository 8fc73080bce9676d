import OpenCombineShim

extension Store {
    /// Changes to one record: `(record, .inserted)`, `(record, .updated)`, or
    /// `(nil, .deleted)`, one per commit that changed it, limited to `changeTypes`.
    /// The same as ``publisher(for:id:changeTypes:)`` with the record's id.
    public func publisher<T: Storable>(
        for record: T, changeTypes: Set<ChangeType> = Set(ChangeType.allCases), isolation: (any Actor)? = #isolation
    ) -> RecordChangesPublisher<T> {
        RecordChangesPublisher(store: self, id: record.id, changeTypes: changeTypes, deliversOnMainActor: isMainActor(isolation))
    }

    /// Changes to the record with this id, which need not exist yet: `(record, .inserted)`,
    /// `(record, .updated)`, or `(nil, .deleted)`, one per commit that changed it, limited to
    /// `changeTypes`. Only changes are sent, not the current record; for the record now and
    /// after every change, use `objectsPublisher(for: FetchRequest(where: \.id == id))`.
    ///
    ///     let watching = store.publisher(for: Message.self, id: 3)
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { message, change in … })
    public func publisher<T: Storable>(
        for type: T.Type, id: T.ID, changeTypes: Set<ChangeType> = Set(ChangeType.allCases), isolation: (any Actor)? = #isolation
    ) -> RecordChangesPublisher<T> {
        RecordChangesPublisher(store: self, id: id, changeTypes: changeTypes, deliversOnMainActor: isMainActor(isolation))
    }

    /// ``publisher(for:id:changeTypes:)`` as an async sequence:
    /// `for try await (message, change) in store.recordChanges(for: Message.self, id: 3)`.
    /// Cancelling the task ends the subscription.
    public func recordChanges<T: Storable>(
        for type: T.Type, id: T.ID, changeTypes: Set<ChangeType> = Set(ChangeType.allCases)
    ) -> AsyncThrowingPublisher<RecordChangesPublisher<T>> {
        publisher(for: type, id: id, changeTypes: changeTypes, isolation: nil).values
    }
}

/// The publisher `store.publisher(for: record)` and `store.publisher(for: Type.self, id:)`
/// return: a named type, so it can be kept in a stored property without `AnyPublisher`.
public struct RecordChangesPublisher<T: Storable>: Publisher, MainActorDelivering {
    public typealias Output = (T?, ChangeType)
    public typealias Failure = any Error

    /// The store observed.
    public let store: Store
    /// The id of the record observed.
    public let id: T.ID
    /// The kinds of change sent.
    public let changeTypes: Set<ChangeType>
    /// Whether values arrive on the main actor (the publisher was made in main-actor code).
    var deliversOnMainActor = false

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if hopsToMainActor(subscriber) { return }
        let entity = T.schema.name
        let key = Result { try id.toValue() }
        let changeTypes = self.changeTypes
        FailingChangeSetPublisher(store: store).tryCompactMap { changeSet -> (T?, ChangeType)? in
            let key = try key.get()
            guard let changes = changeSet.changes(to: entity) else { return nil }
            if changeTypes.contains(.deleted), changes.deleted.contains(key) { return (nil, .deleted) }
            if changeTypes.contains(.inserted), let change = changes.inserted.first(where: { $0.id == key }) {
                return (try RecordCoding.decode(T.self, from: change.row), .inserted)
            }
            if changeTypes.contains(.updated), let change = changes.updated.first(where: { $0.id == key }) {
                return (try RecordCoding.decode(T.self, from: change.row), .updated)
            }
            return nil
        }
        .receive(subscriber: subscriber)
    }
}
