/// Which record types this store has brought up to date: for each type with searchable
/// fields, the rows written before a field became searchable (or by a writer that bypasses
/// the core) lack their folded shadow columns, and a folded predicate would silently miss
/// them. The first write of such a type in a store's lifetime refolds those rows; a folded
/// read before it checks that there are none and otherwise throws, naming the fix.
@usableFromInline
final class ShadowCheck: Sendable {
    private let current = Locked<Set<ObjectIdentifier>>([])

    /// Whether the store has checked or refolded `T`'s rows already.
    func isCurrent<T: Storable>(_ type: T.Type) -> Bool {
        current.withLock { $0.contains(ObjectIdentifier(type)) }
    }

    /// Whether `query` compares against shadow columns of `T` that rows might lack: `T` has
    /// searchable fields, its rows are not known to be current, and the predicate names a
    /// column beyond its fields. Only then does a read probe for stale rows first.
    @usableFromInline
    func needsProbe<T: Storable>(_ type: T.Type, for query: Query) -> Bool {
        guard T.schema.hasSearchableFields, !isCurrent(T.self), let predicate = query.predicate else { return false }
        return !predicate.columns.isSubset(of: T.schema.fields.map(\.column))
    }

    /// Notes that `T`'s rows all hold current shadow columns.
    func markCurrent<T: Storable>(_ type: T.Type) {
        _ = current.withLock { $0.insert(ObjectIdentifier(type)) }
    }

    /// The predicate matching `T`'s rows whose fully folded shadow column is missing while the
    /// field holds text; a field's value that changed without its shadow is the plain-SQL
    /// writer's case, which Backends.md lists as a limit.
    static func staleRows<T: Storable>(_ type: T.Type) -> RowPredicate {
        let both: TextMatchOptions = [.caseInsensitive, .diacriticInsensitive]
        return .or(T.schema.searchableColumns.map { column in
            .and([.compare(column: TextFolding.shadowColumn(for: column, options: both), .equal, .null),
                  .not(.compare(column: column, .equal, .null))])
        })
    }
}

extension Snapshot {
    /// Throws `.invalidSchema` when `query` compares against shadow columns that some of
    /// `T`'s rows lack; checked once per store and type, then remembered.
    @usableFromInline
    func checkShadows<T: Storable>(_ type: T.Type, for query: Query) throws {
        guard let shadowCheck, shadowCheck.needsProbe(T.self, for: query) else { return }
        let probe = try Query(entity: query.entity, predicate: ShadowCheck.staleRows(T.self), limit: 1)
        guard try reader.count(probe) == 0 else {
            throw ReservoirError(.invalidSchema, "\"\(T.schema.name)\" has rows of \(T.self) written before its searchable fields (\(T.schema.searchableColumns.joined(separator: ", "))) were declared, so a folded predicate would miss them; any write of a \(T.self) in this store refolds them, or call `try store.write { try $0.refold(\(T.self).self) }` once")
        }
        shadowCheck.markCurrent(T.self)
    }
}

extension Transaction {
    /// Rewrites every `T` row whose folded shadow columns are missing or out of date (rows
    /// written before a field became searchable, or by plain SQL); returns how many. The
    /// store refolds rows missing them on its first write of each type by itself; call this
    /// after writers that bypass the core change a searchable field.
    @discardableResult
    public func refold<T: Storable>(_ type: T.Type) throws -> Int {
        try checkOpen()
        try T.schema.validate()
        guard T.schema.hasSearchableFields else { return 0 }
        return try refold(T.self, rows: writer.fetch(Query(entity: T.schema.entity)))
    }

    /// Refolds the `T` rows that lack shadow columns unless this store did already: its first
    /// write of `T` runs it (and `update`/`delete(matching:)` before selecting, so that a folded
    /// request misses no older row).
    func refoldIfNeeded<T: Storable>(_ type: T.Type) throws {
        guard T.schema.hasSearchableFields, let shadowCheck, !shadowCheck.isCurrent(T.self) else { return }
        _ = try refold(T.self, rows: writer.fetch(Query(entity: T.schema.entity, predicate: ShadowCheck.staleRows(T.self))))
    }

    private func refold<T: Storable>(_ type: T.Type, rows: [Row]) throws -> Int {
        let schema = T.schema
        var count = 0
        for row in rows where !schema.hasCurrentShadows(row) {
            try store(schema.entity, id: row.value(schema.idColumn), row: schema.addingShadows(to: row), previous: row)
            count += 1
        }
        shadowCheck?.markCurrent(T.self)
        return count
    }
}
