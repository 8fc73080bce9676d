/// A consistent read view of a store, passed to ``Store/read(_:)-454du``.
///
/// Valid only inside the closure it was passed to; using it afterwards throws `.misuse`.
public class Snapshot {
    @usableFromInline let reader: any ReadTransaction
    @exclusivity(unchecked) private(set) var isOpen = true
    /// The store's record of which types' shadow columns are current; nil outside a store.
    @usableFromInline let shadowCheck: ShadowCheck?

    init(reader: any ReadTransaction, shadowCheck: ShadowCheck? = nil) {
        self.reader = reader
        self.shadowCheck = shadowCheck
    }

    func invalidate() { isOpen = false }

    @usableFromInline
    func checkOpen() throws {
        guard isOpen else {
            throw ReservoirError(.misuse, "a transaction was used after its read or write closure returned; use it only inside the closure")
        }
    }

    /// The records `request` selects, in its order.
    // Inlinable so it is specialized for the caller's record type: decoding and collecting
    // records then make direct calls instead of going through witness tables and generic metadata.
    /// The records `request` matches in this snapshot, sorted and windowed.
    @inlinable
    public final func fetch<T: Storable>(_ request: FetchRequest<T>) throws -> [T] {
        try checkOpen()
        let query = try request.query()
        try checkShadows(T.self, for: query)
        return try RecordCoding.records(T.self, fetch: { try reader.fetch(query, expecting: $0, each: $1) },
                                        scan: { try reader.scan(query, expecting: $0, rows: $1, readers: $2) })
    }

    /// Every record of a type, in id order.
    @inlinable
    public final func fetch<T: Storable>(_ type: T.Type) throws -> [T] {
        try fetch(FetchRequest<T>())
    }

    /// The number of records `request` selects (after offset and limit).
    public final func count<T: Storable>(_ request: FetchRequest<T>) throws -> Int {
        try checkOpen()
        let query = try request.query()
        try checkShadows(T.self, for: query)
        return try reader.count(query)
    }

    /// The record with this id, or nil.
    @inlinable
    public final func get<T: Storable>(_ type: T.Type, id: T.ID) throws -> T? {
        try checkOpen()
        try T.schema.validate()
        var record: T?
        _ = try reader.withRow(T.schema.name, id: id.toValue()) { record = try RecordCoding.decode(T.self, from: $0) }
        return record
    }

    /// The records with these ids, in the order of `ids`; an id with no record is left out,
    /// and an id given twice gives its record twice.
    ///
    ///     let messages = try snapshot.get(Message.self, ids: [3, 5, 8])
    public final func get<T: Storable, IDs: Sequence>(_ type: T.Type, ids: IDs) throws -> [T] where IDs.Element == T.ID {
        try checkOpen()
        try T.schema.validate()
        let entity = T.schema.name
        var records: [T] = []
        records.reserveCapacity(ids.underestimatedCount)
        for id in ids {
            _ = try reader.withRow(entity, id: id.toValue()) { records.append(try RecordCoding.decode(T.self, from: $0)) }
        }
        return records
    }

    /// Whether a record with this id exists.
    public final func contains<T: Storable>(_ type: T.Type, id: T.ID) throws -> Bool {
        try checkOpen()
        return try reader.row(T.schema.name, id: id.toValue()) != nil
    }

    /// Raw rows for a backend-neutral query: for tools that have no Swift types.
    public final func rows(_ query: Query) throws -> [Row] {
        try checkOpen()
        return try reader.fetch(query)
    }

    /// The number of rows a backend-neutral query selects.
    public final func count(_ query: Query) throws -> Int {
        try checkOpen()
        return try reader.count(query)
    }

    /// The entities the store holds rows for.
    public final func entities() throws -> [EntityDescription] {
        try checkOpen()
        return try reader.entities()
    }

    /// The sequence number of the newest committed change set.
    public final func lastSequence() throws -> UInt64 {
        try checkOpen()
        return try reader.lastSequence()
    }
}
