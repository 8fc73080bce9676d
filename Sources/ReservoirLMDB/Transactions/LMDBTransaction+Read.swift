import CLMDB
import Foundation
import Reservoir

/// The read role: rows by id and the stored entities (fetching is in `Query/`, the change
/// log in `Changes/`).
extension LMDBTransaction {
    func row(_ entity: String, id: Value) throws -> Row? {
        try storedRow(entity, id: id) { bytes, key in try decodeRow(bytes, entity: entity, key: key) }
    }

    /// The row, decoded into the transaction's lent row and handed to `body`: a point read
    /// then allocates and frees no row (freeing one costs about 1,000 instructions, a value
    /// witness per column).
    func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool {
        let found = try storedRow(entity, id: id) { bytes, key -> Bool in
            guard try rowCoding.reader.decode(bytes, into: &rowCoding.lent, renames: renameHistory(entity), layouts: layout) else {
                throw corruptRow(bytes, entity: entity, key: key)
            }
            return true
        } ?? false
        if found {
            // Moved out for the call and back after it: lending the property itself retained
            // and released both of the row's arrays around `body`.
            var row = Row()
            swap(&row, &rowCoding.lent)
            defer { swap(&row, &rowCoding.lent) }
            try body(row)
        }
        return found
    }

    /// `decode` applied to the stored bytes of `entity`'s row `id` and its key, or nil when
    /// there is no such row.
    @inline(__always)
    private func storedRow<T>(_ entity: String, id: Value,
                              _ decode: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> T) throws -> T? {
        _ = try liveTransaction()  // an ended transaction is refused before any cache answers
        return try LMDBErrors.convert(path: path) {
            guard let rows = try rowsDatabase(entity) else { return nil }
            return try KeyEncoding.withEncoded(id) { key -> T? in
                guard key.count < environment.maxKeySize, let bytes = try get(rows, key) else { return nil }
                return try decode(bytes, key)
            }
        }
    }

    func entities() throws -> [EntityDescription] {
        _ = try liveTransaction()  // an ended transaction is refused before any cache answers
        return try LMDBErrors.convert(path: path) {
            guard let meta = try database(StoreFormat.metaDatabase) else { return [] }
            var found: [EntityDescription] = []
            let prefix = StoreFormat.entityKeyPrefix
            try scan(meta, from: prefix) { key, value in
                guard key.starts(with: prefix) else { return false }
                guard let entity = StoreFormat.decodeEntity(value) else {
                    throw ReservoirError(.corrupt, "\(lmdbStore(path)): a stored entity description cannot be decoded")
                }
                found.append(entity)
                return true
            }
            return try found.filter { entity in
                guard let rows = try rowsDatabase(entity.name) else { return false }
                return try entryCount(rows) > 0
            }.sorted { $0.name < $1.name }
        }
    }

}
