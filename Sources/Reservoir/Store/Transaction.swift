/// The write transaction passed to ``Store/write(_:)-417md``: everything a ``Snapshot`` reads
/// (including this transaction's own writes) plus insert, update, upsert and delete.
///
/// Everything done through it commits together when the closure returns, or not at all
/// when it throws.
public final class Transaction: Snapshot {
    let writer: any WriteTransaction
    @exclusivity(unchecked) private var tracker = ChangeTracker()
    /// The record type last written and its entity, once checked: a run of records of one
    /// type skips the schema checks (and their lock) after the first. Two properties rather
    /// than an optional tuple, which the runtime copies through generic value witnesses.
    @exclusivity(unchecked) private var checkedType: ObjectIdentifier?
    @exclusivity(unchecked) private var checkedEntity: EntityDescription?
    /// Whether the checked type has searchable fields, whose shadow columns each row needs:
    /// asking `T.schema` per record builds the schema again (about 750 instructions a record).
    @exclusivity(unchecked) private var checkedSearchable = false

    init(writer: any WriteTransaction, shadowCheck: ShadowCheck? = nil) {
        self.writer = writer
        super.init(reader: writer, shadowCheck: shadowCheck)
    }

    /// Inserts a new record; throws `.duplicateID` when one with its id exists.
    public func insert<T: Storable>(_ record: T) throws {
        let (entity, id, row) = try prepare(record)
        guard try writer.insert(entity, id: id, row: row) else {
            throw ReservoirError(.duplicateID, "cannot insert \(T.self) with id \(id) into \"\(entity.name)\": a record with that id exists (use upsert to replace it)")
        }
        tracker.noteInserted(entity, id: id, row: row)
    }

    /// Replaces an existing record; throws `.notFound` when none has its id.
    public func update<T: Storable>(_ record: T) throws {
        let (entity, id, row) = try prepare(record)
        guard let previous = try writer.row(entity.name, id: id) else {
            throw ReservoirError(.notFound, "cannot update \(T.self) with id \(id) in \"\(entity.name)\": no record has that id (use insert or upsert)")
        }
        try store(entity, id: id, row: row, previous: previous)
    }

    /// Inserts the record, or replaces the one with its id. Returns what happened:
    /// `.inserted`, `.updated`, or nil when the stored record was already identical
    /// (nothing is written then, and no change is announced).
    @discardableResult
    public func upsert<T: Storable>(_ record: T) throws -> ChangeType? {
        let (entity, id, row) = try prepare(record)
        let previous = try writer.row(entity.name, id: id)
        return try store(entity, id: id, row: row, previous: previous)
    }

    /// Deletes the record with this id; returns whether one existed.
    @discardableResult
    public func delete<T: Storable>(_ type: T.Type, id: T.ID) throws -> Bool {
        try checkOpen()
        try T.schema.validate()
        let entity = T.schema.entity
        let key = try id.toValue()
        guard let previous = try writer.row(entity.name, id: key) else { return false }
        try writer.delete(entity, id: key)
        tracker.note(entity, id: key, before: previous, after: nil)
        return true
    }

    /// Deletes this record (by its id); returns whether it existed.
    @discardableResult
    public func delete<T: Storable>(_ record: T) throws -> Bool {
        try delete(T.self, id: record.id)
    }

    /// Deletes every record `request` selects (its limit and offset included); returns how many.
    ///
    ///     let removed = try tx.delete(matching: FetchRequest<Message>(where: \.channel == "old"))
    @discardableResult
    public func delete<T: Storable>(matching request: FetchRequest<T>) throws -> Int {
        try checkOpen()
        try refoldIfNeeded(T.self)
        let query = try request.query()
        let idColumn = query.entity.idColumn
        let rows = try writer.fetch(query)
        for row in rows {
            let id = row.value(idColumn)
            try writer.delete(query.entity, id: id)
            tracker.note(query.entity, id: id, before: row, after: nil)
        }
        return rows.count
    }

    /// ``delete(matching:)`` without the label.
    @discardableResult
    public func delete<T: Storable>(_ request: FetchRequest<T>) throws -> Int {
        try delete(matching: request)
    }

    /// Stores a raw row (insert or replace): for tools that copy stores without Swift types.
    /// The row must hold the entity's id column. A NaN real is stored as null, as a record's is.
    @discardableResult
    public func putRow(_ row: Row, in entity: EntityDescription) throws -> ChangeType? {
        try checkOpen()
        var row = row
        if row.values.contains(where: { !$0.stored.isIdentical(to: $0) }) {
            row = Row(columns: row.columns, values: row.values.map(\.stored))
        }
        guard let id = row[entity.idColumn], !id.isNull else {
            throw ReservoirError(.invalidSchema, "row for \"\(entity.name)\" has no value in its id column \"\(entity.idColumn)\": \(row)")
        }
        let previous = try writer.row(entity.name, id: id)
        return try store(entity, id: id, row: row, previous: previous)
    }

    /// Deletes the raw row stored under `id`: the counterpart of ``putRow(_:in:)`` for tools
    /// without Swift types. Returns whether one existed.
    @discardableResult
    public func deleteRow(id: Value, in entity: EntityDescription) throws -> Bool {
        try checkOpen()
        guard let previous = try writer.row(entity.name, id: id) else { return false }
        try writer.delete(entity, id: id)
        tracker.note(entity, id: id, before: previous, after: nil)
        return true
    }

    // MARK: - Internals

    func prepare<T: Storable>(_ record: T) throws -> (EntityDescription, Value, Row) {
        try checkOpen()
        if checkedType == ObjectIdentifier(T.self), let checkedEntity {
            // Another record of the type just written: its schema is known good.
            let row = try RecordCoding.encodeChecked(record)
            return (checkedEntity, try record.id.toValue(), checkedSearchable ? T.schema.addingShadows(to: row) : row)
        }
        let type = ObjectIdentifier(T.self)
        if let entity = Self.preparedTypes.withLock({ $0[type] }) {
            // A type an earlier transaction checked, with no searchable fields: asking
            // `T.schema` again cost a single-record commit about 800 instructions.
            let row = try RecordCoding.encodeChecked(record)
            (checkedType, checkedEntity, checkedSearchable) = (type, entity, false)
            return (entity, try record.id.toValue(), row)
        }
        let schema = T.schema
        try schema.validate()
        var row = try RecordCoding.encode(record)
        let entity = schema.entity
        if schema.hasSearchableFields {
            row = schema.addingShadows(to: row)
            try refoldIfNeeded(T.self)
        } else {
            Self.preparedTypes.withLock { $0[type] = entity }
        }
        checkedType = type
        checkedEntity = entity
        checkedSearchable = schema.hasSearchableFields
        return (entity, try record.id.toValue(), row)
    }

    /// The entity of each record type whose schema validated and whose first record was
    /// checked against it (``RecordCoding/encode(_:)``), when it has no searchable fields (a
    /// searchable one's rows need the schema for their shadow columns, and the store may need
    /// a refold): both are fixed for the life of the process, so every transaction after
    /// the first takes the entity from here.
    private static let preparedTypes = Locked<[ObjectIdentifier: EntityDescription]>([:])

    @discardableResult
    func store(_ entity: EntityDescription, id: Value, row: Row, previous: Row?) throws -> ChangeType? {
        if let previous {
            if previous == row { return nil }
            try writer.put(entity, id: id, row: row, replacing: previous)
        } else {
            try writer.put(entity, id: id, row: row)
        }
        tracker.note(entity, id: id, before: previous, after: row, differing: true)  // equal rows returned above
        return previous == nil ? .inserted : .updated
    }

    /// The change set this transaction makes, numbered `sequence`, or nil when it changed nothing.
    func makeChangeSet(sequence: UInt64) -> ChangeSet? {
        tracker.changeSet(sequence: sequence)
    }
}
