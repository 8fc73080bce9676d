extension Transaction {
    /// Changes the record with this id in place and stores it; returns the record as
    /// stored, or nil when no record has the id (nothing is written then, as `delete`
    /// returns false rather than throwing).
    ///
    ///     try store.write { tx in try tx.update(Message.self, id: 2) { $0.score = 6 } }
    ///
    /// A change that leaves the record as it was writes nothing and announces no change.
    /// Changing the record's id throws `.misuse`: delete it and insert a new one instead.
    @discardableResult
    public func update<T: Storable>(_ type: T.Type, id: T.ID, _ change: (inout T) throws -> Void) throws -> T? {
        try checkOpen()
        try T.schema.validate()
        guard let previous = try writer.row(T.schema.name, id: id.toValue()) else { return nil }
        var record = try RecordCoding.decode(T.self, from: previous)
        try change(&record)
        try rewrite(record, previous: previous, id: id)
        return record
    }

    /// Changes every record `request` selects (its limit and offset included) and stores
    /// them; returns how many it selected. Records the change leaves as they were are not
    /// written. Changing a record's id throws `.misuse`, and the whole write rolls back.
    ///
    ///     let muted = try tx.update(matching: FetchRequest<Message>(where: \.channel == "random")) {
    ///         $0.muted = true
    ///     }
    @discardableResult
    public func update<T: Storable>(matching request: FetchRequest<T>, _ change: (inout T) throws -> Void) throws -> Int {
        try checkOpen()
        try refoldIfNeeded(T.self)
        let rows = try writer.fetch(request.query())
        for previous in rows {
            var record = try RecordCoding.decode(T.self, from: previous)
            let id = record.id
            try change(&record)
            try rewrite(record, previous: previous, id: id)
        }
        return rows.count
    }

    /// Stores `record`, which replaces `previous` (stored under `id`).
    private func rewrite<T: Storable>(_ record: T, previous: Row, id: T.ID) throws {
        guard record.id == id else {
            throw ReservoirError(.misuse, "an update closure changed the id of \(T.self) \(id) to \(record.id); ids cannot change in place (delete the record and insert one with the new id)")
        }
        let (entity, key, row) = try prepare(record)
        try store(entity, id: key, row: row, previous: previous)
    }
}
