import CLMDB
import Foundation
import Reservoir

/// A migration's type change in one walk of the row database (``WriteTransaction/convertColumn(_:in:_:converted:)``).
extension LMDBTransaction {
    /// Rows a conversion reads before writing the changed ones back.
    static let convertBatch = 1000

    /// Converts `column` of every row where it is stored: a cursor walks the entity's row
    /// database a batch at a time, each row is decoded and its value converted, and the changed
    /// rows are written back under their keys (in key order), the column's index entries moved
    /// if it has one.
    /// The default path read the rows out a page at a time through the core and put each
    /// changed one again (a search from the root per row, the old row read again when the
    /// entity has indexes).
    ///
    /// Only in a rerunnable write (a migration's version): there nothing is kept to replay, and a
    /// full map or any failure ends the write as for every other operation (the version is run
    /// again, or rolls back). An ordinary write keeps each operation to replay, which this one is
    /// not; it declines there, and when the entity is not stored as described.
    func convertColumn(_ column: String, in entity: EntityDescription,
                       _ convert: (_ id: Value, _ value: Value) throws -> Value,
                       converted: (Int) -> Void) throws -> Bool {
        _ = try liveTransaction()
        guard !replay.keepsOperations, column != entity.idColumn,
              try storedDescription(entity.name) == entity,
              let rows = try rowsDatabase(entity.name) else { return false }
        let index = entity.indexes.contains(column) ? try indexDatabase(entity.name, column, create: true) : nil
        if let poisoned = replay.poisoned { throw poisoned }
        // Rows read through the entity's renamed columns, and written in a layout at or above
        // its newest rename (``RenameHistory``), as every put of the entity is.
        let renames = try renameHistory(entity.name)
        let floor = renames?.floor ?? 0
        _ = try performOnce {
            var row = Row()
            var reader = StoredRowDecoder()
            var count = 0
            // Rows are read with a cursor a batch at a time, and the batch's changed rows written
            // after the cursor is closed: a cursor's own `MDB_CURRENT` put of a value of another
            // size left it visiting rows again.
            var changes: [(key: [UInt8], row: Row, old: Value, new: Value)] = []
            var resumeAfter: [UInt8]?
            /// Reads and converts the next batch into `changes`; false once the walk reached the end.
            func readBatch(_ cursor: inout MDBCursor) throws -> Bool {
                var record: MDBCursor.Record?
                if let start = resumeAfter {
                    record = try start.withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
                    if let found = record, found.key.elementsEqual(start) { record = try cursor.next() }
                } else {
                    record = try cursor.first()
                }
                while let (key, bytes) = record {
                    guard try reader.decode(bytes, into: &row, renames: renames, layouts: layout) else {
                        throw corruptRow(bytes, entity: entity.name, key: key)
                    }
                    let old = row.value(column)
                    let new = try convert(row.value(entity.idColumn), old)
                    if !new.isIdentical(to: old) {
                        var changed = row
                        changed[column] = new
                        changes.append((Array(key), changed, old, new))
                    }
                    count += 1
                    if count % Self.convertBatch == 0 {
                        converted(count)
                        resumeAfter = Array(key)
                        return true
                    }
                    record = try cursor.next()
                }
                return false
            }
            var more = true
            while more {
                changes.removeAll(keepingCapacity: true)
                more = try liveTransaction().withCursor(rows, "convert a column") { try readBatch(&$0) }
                for change in changes {
                    try change.key.withUnsafeBytes { key in
                        if let index, Value.compare(change.old, change.new) != 0 {
                            try withIndexKey(change.old, id: key) { try del(index, $0) }
                            try withIndexKey(change.new, id: key) { try putEmpty(index, $0) }
                        }
                        _ = try putRow(rows, key, change.row, floor: floor, onlyNew: false)
                    }
                }
            }
            return true
        }
        return true
    }
}
