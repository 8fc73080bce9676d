import OpenCombineShim

extension Store {
    /// Changes to one record: `(record, .inserted)`, `(record, .updated)`, or
    /// `(nil, .deleted)`, one per commit that changed it, limited to `changeTypes`.
    public func publisher<T: Storable>(
        for record: T, changeTypes: Set<ChangeType> = Set(ChangeType.allCases)
    ) -> some Publisher<(T?, ChangeType), any Error> {
        let entity = T.schema.name
        let id = Result { try record.id.toValue() }
        return FailingChangeSetPublisher(store: self).tryCompactMap { changeSet -> (T?, ChangeType)? in
            let key = try id.get()
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
    }

    /// Changes to every record of a type: per commit that touched it, the records grouped
    /// by change type (inserted, then updated, then deleted), limited to `changeTypes`.
    /// Deleted records are given as they were before the commit; for commits by other
    /// processes whose backend does not log deleted rows, see ``EntityChanges/deletedRows``.
    public func publisher<T: Storable>(
        for type: T.Type, changeTypes: Set<ChangeType> = Set(ChangeType.allCases)
    ) -> some Publisher<[([T], ChangeType)], any Error> {
        let entity = T.schema.name
        return FailingChangeSetPublisher(store: self).tryCompactMap { changeSet -> [([T], ChangeType)]? in
            guard let changes = changeSet.changes(to: entity) else { return nil }
            var groups: [([T], ChangeType)] = []
            for (kind, rows) in [(ChangeType.inserted, changes.inserted), (.updated, changes.updated), (.deleted, changes.deletedRows)]
            where changeTypes.contains(kind) && !rows.isEmpty {
                groups.append((try rows.map { try RecordCoding.decode(T.self, from: $0.row) }, kind))
            }
            return groups.isEmpty ? nil : groups
        }
    }
}
