/// What to fetch: a record type, an optional predicate, a sort, a window.
///
///     FetchRequest<Todo>(where: \.done == false && \.priority >= 2,
///                        sortBy: [.descending(\.priority), .ascending(\.title)],
///                        limit: 50)
public struct FetchRequest<Root: Storable>: Sendable {
    /// Which records to fetch; nil for all of them.
    public var predicate: RecordPredicate<Root>?
    /// The sort keys, in order; the id ascending always breaks ties.
    public var sortBy: [SortKey<Root>]
    /// At most this many records; nil for all.
    public var limit: Int?
    /// Skip this many records of the sorted result first.
    public var offset: Int

    /// A request for the records matching `predicate`, sorted by `sortBy`, skipping `offset` and keeping at most `limit`.
    public init(where predicate: RecordPredicate<Root>? = nil, sortBy: [SortKey<Root>] = [], limit: Int? = nil, offset: Int = 0) {
        self.predicate = predicate
        self.sortBy = sortBy
        self.limit = limit
        self.offset = offset
    }

    /// Resolves key paths through the schema into a backend-neutral ``Query``.
    // Inlinable, so it is specialized for the record type: unspecialized, every fetch looked
    // up the generic metadata of `Schema<Root>`, `SortKey<Root>` and `[SortKey<Root>]`.
    @inlinable
    public func query() throws -> Query {
        let schema = Root.schema
        try schema.validate()
        let terms = try sortBy.map { try $0.term(in: schema) }
        return try Query(
            entity: schema.entity,
            predicate: predicate?.resolve(schema),
            sort: terms,
            limit: limit,
            offset: offset
        )
    }
}
