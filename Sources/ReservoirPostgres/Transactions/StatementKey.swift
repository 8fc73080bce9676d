/// Which statement for which table: the cache key of ``PGReadTransaction/statements``.
struct StatementKey: Hashable {
    enum Kind: Hashable {
        case byID, copy, insert, upsert, new
        /// A query of a value-free shape (``PGQueryShape``).
        case query(PGQueryShape)
    }
    let entity: String
    let kind: Kind
    /// For inserts and upserts: the table columns the row has values for, as bits.
    let present: UInt64
}
