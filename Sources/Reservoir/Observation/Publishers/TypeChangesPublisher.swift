import OpenCombineShim

extension Store {
    /// Changes to every record of a type: per commit that touched it, the records grouped
    /// by change type (inserted, then updated, then deleted), limited to `changeTypes`.
    /// Deleted records are given as they were before the commit; for commits by other
    /// processes whose backend does not log deleted rows, see ``EntityChanges/deletedRows``.
    public func publisher<T: Storable>(
        for type: T.Type, changeTypes: Set<ChangeType> = Set(ChangeType.allCases), isolation: (any Actor)? = #isolation
    ) -> TypeChangesPublisher<T> {
        TypeChangesPublisher(store: self, changeTypes: changeTypes, deliversOnMainActor: isMainActor(isolation))
    }
}

/// The publisher `store.publisher(for: Type.self)` returns: a named type, so
/// it can be kept in a stored property without `AnyPublisher`.
public struct TypeChangesPublisher<T: Storable>: Publisher, MainActorDelivering {
    public typealias Output = [([T], ChangeType)]
    public typealias Failure = any Error

    /// The store observed.
    public let store: Store
    /// The kinds of change sent.
    public let changeTypes: Set<ChangeType>
    /// Whether values arrive on the main actor (the publisher was made in main-actor code).
    var deliversOnMainActor = false

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        if hopsToMainActor(subscriber) { return }
        let entity = T.schema.name
        let changeTypes = self.changeTypes
        FailingChangeSetPublisher(store: store).tryCompactMap { changeSet -> [([T], ChangeType)]? in
            guard let changes = changeSet.changes(to: entity) else { return nil }
            var groups: [([T], ChangeType)] = []
            for (kind, rows) in [(ChangeType.inserted, changes.inserted), (.updated, changes.updated), (.deleted, changes.deletedRows)]
            where changeTypes.contains(kind) && !rows.isEmpty {
                groups.append((try rows.map { try RecordCoding.decode(T.self, from: $0.row) }, kind))
            }
            return groups.isEmpty ? nil : groups
        }
        .receive(subscriber: subscriber)
    }
}
