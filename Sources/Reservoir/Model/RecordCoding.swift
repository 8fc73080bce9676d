/// Encodes and decodes records with the errors and schema checks the store wants:
/// messages name the type, the entity and the id.
@usableFromInline
enum RecordCoding {
    /// The types whose rows were checked against their schema.
    private static let verified = Locked<Set<ObjectIdentifier>>([])

    /// Encodes `record` with its ``Storable/makeRow()``; the first record of each type is
    /// checked against the schema.
    static func encode<T: Storable>(_ record: T) throws -> Row {
        let row = try encodeChecked(record)
        let type = ObjectIdentifier(T.self)
        if !verified.withLock({ $0.contains(type) }) {
            try verifySchema(record, row)
            verified.withLock { _ = $0.insert(type) }
        }
        return row
    }

    /// Encodes a record of a type ``encode(_:)`` has checked already.
    static func encodeChecked<T: Storable>(_ record: T) throws -> Row {
        do {
            return try record.makeRow()
        } catch let error as ReservoirError {
            throw ReservoirError(error.code, "cannot encode \(T.self) with id \(record.id) for \"\(T.schema.name)\": \(error.message)")
        }
    }

    @inlinable @inline(__always)
    static func decode<T: Storable>(_ type: T.Type, from row: Row) throws -> T {
        do {
            return try T(row: row)
        } catch {
            throw decodingError(error, T.self, id: row.value(T.schema.idColumn))
        }
    }

    /// The record a fetch's reader lends, through ``Storable/init(reader:)``.
    @inlinable @inline(__always)
    static func decode<T: Storable>(_ type: T.Type, from reader: borrowing RowReader) throws -> T {
        do {
            return try T(reader: reader)
        } catch {
            throw decodingError(error, T.self, id: reader.value(T.schema.idColumn))
        }
    }

    /// The records of the rows a query selects: for a type that reads columns
    /// (``Storable/readsColumns``), from what `scan` hands over (a snapshot's or a backend's
    /// `scan(_:expecting:rows:readers:)`: rows or readers), else from the rows of `fetch` (their
    /// `fetch(_:expecting:each:)`), in an array of exactly their number (``RecordCollector``).
    @inlinable
    static func records<T: Storable>(_ type: T.Type,
                                     fetch: (_ expecting: (Int) -> Void, _ each: (Row) throws -> Void) throws -> Void,
                                     scan: (_ expecting: (Int) -> Void, _ rows: (Row) throws -> Void,
                                            _ readers: (borrowing RowReader) throws -> Void) throws -> Void) throws -> [T] {
        var records = RecordCollector<T>()
        defer { records.discard() }
        if T.readsColumns {
            try scan({ records.expect($0) }, { records.append(try decode(T.self, from: $0)) },
                     { records.append(try decode(T.self, from: $0)) })
        } else {
            try fetch({ records.expect($0) }) { records.append(try decode(T.self, from: $0)) }
        }
        return records.finish()
    }

    /// The error for a row with `id` that `T` could not decode, naming the type, entity and id.
    @usableFromInline
    static func decodingError<T: Storable>(_ error: any Error, _ type: T.Type, id: Value) -> ReservoirError {
        let reason = (error as? ReservoirError)?.message ?? "\(error)"
        return ReservoirError(.typeMismatch, "cannot decode \(T.self) from \"\(T.schema.name)\" row with id \(id): \(reason)")
    }

    /// Checks once per type that each schema field's column holds what its key path reads,
    /// which catches a column name that does not match the record's `CodingKeys`.
    private static func verifySchema<T: Storable>(_ record: T, _ row: Row) throws {
        let schema = T.schema
        for field in schema.fields {
            guard let stored = row[field.column] else {
                throw ReservoirError(.invalidSchema, "schema of \(T.self) (\"\(schema.name)\") names column \"\(field.column)\" for \(field.keyPath), but \(T.self) encodes columns \(row.columns.joined(separator: ", ")); pass column: with the name its CodingKey uses")
            }
            let expected = try field.extract(record)
            guard stored.isIdentical(to: expected) else {
                throw ReservoirError(.invalidSchema, "schema of \(T.self) (\"\(schema.name)\") maps \(field.keyPath) to column \"\(field.column)\", but that column holds \(stored) where the key path reads \(expected); pass column: with the right name")
            }
        }
    }
}
