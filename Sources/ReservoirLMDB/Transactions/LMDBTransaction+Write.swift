import CLMDB
import Foundation
import Reservoir

/// The write role: each operation is performed through the replay log (`+Replay`), whose
/// replays call the `apply` functions here again.
extension LMDBTransaction {
    func put(_ entity: EntityDescription, id: Value, row: Row) throws {
        try put(entity, id: id, row: row, previous: nil)
    }

    /// ``put(_:id:row:)`` with the stored row's old index values taken from `previous`.
    func put(_ entity: EntityDescription, id: Value, row: Row, replacing previous: Row) throws {
        try put(entity, id: id, row: row, previous: previous)
    }

    /// A put, the old row's index values from `previous` when given. The replay log keeps a
    /// plain put: a replay reads the old row again.
    private func put(_ entity: EntityDescription, id: Value, row: Row, previous: Row?) throws {
        if !fitsKey(id) { _ = try idKey(id, entity: entity.name) }
        let index = replay.entityIndex(entity)
        try perform(.put(entity: index, id: id, row: row)) { try applyPut(index, id: id, row: row, onlyNew: false, previous: previous) }
    }

    /// One `mdb_put` with `MDB_NOOVERWRITE`: no separate read for the existing row.
    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        if !fitsKey(id) { _ = try idKey(id, entity: entity.name) }
        let index = replay.entityIndex(entity)
        return try perform(.insert(entity: index, id: id, row: row)) { try applyPut(index, id: id, row: row, onlyNew: true) }
    }

    func delete(_ entity: EntityDescription, id: Value) throws {
        // An id too long for a key was never stored.
        guard fitsKey(id) else { return }
        try perform(.delete(entity: replay.entityIndex(entity), id: id))
    }

    func record(_ changeSet: ChangeSet) throws {
        try perform(.record(changeSet))
    }

    func trimChangeLog(through sequence: UInt64) throws {
        try perform(.trimLog(through: sequence))
    }

    func setMetadata(_ key: String, to value: Data?) throws {
        try perform(.setMetadata(key: key, value: value))
    }

    /// Keeps `value` under `data/KEY` in the meta database, or deletes that key.
    func applySetMetadata(_ key: String, _ value: Data?) throws {
        guard let meta = try database(StoreFormat.metaDatabase, create: true) else { return }
        let name = StoreFormat.metadataKey(key)
        if let value {
            try put(meta, name, [UInt8](value))
        } else {
            try name.withUnsafeBytes { try liveTransaction().delete(meta, $0) }
        }
    }

    /// A migration's renamed or merged entity, whose rows it deleted: its row and index
    /// databases are deleted (``applyDropEntity(_:)``).
    func dropEntity(_ entity: EntityDescription) throws {
        try perform(.dropEntity(entity.name))
    }

    /// Deletes the row database and index databases of `name` when it holds no rows, so that
    /// renamed entities do not leave empty databases behind (each takes one of `maxdbs`). Its
    /// stored description stays, as after deleting every row. Skipped, leaving them empty,
    /// while another transaction of this process is live (``LMDBEnvironment/deleteDatabases(_:in:)``).
    func applyDropEntity(_ name: String) throws {
        let txn = try liveTransaction()
        guard let rows = try rowsDatabase(name),
              try txn.stat(rows, "count the rows of \"\(name)\"").ms_entries == 0 else { return }
        let rowsName = StoreFormat.rowsDatabase(name)
        let indexPrefix = StoreFormat.indexDatabase(name, "")
        let names = try txn.withCursor(CLMDB_MAIN_DBI, "list the named databases") { cursor in
            var names: [String] = []
            var record = try cursor.first()
            while let current = record {
                let key = String(decoding: current.key, as: UTF8.self)
                if key == rowsName || key.hasPrefix(indexPrefix) { names.append(key) }
                record = try cursor.next()
            }
            return names
        }
        var databases: [(name: String, handle: MDB_dbi)] = []
        for database in names {
            if let handle = try self.database(database) { databases.append((database, handle)) }
        }
        guard try environment.deleteDatabases(databases, in: txn) else { return }
        for database in databases {
            handles.committed[database.name] = nil
            handles.opened[database.name] = nil
            handles.verified.removeAll { $0 == database.handle }
        }
        handles.rows[name] = nil
        handles.lastRows = nil
        // The environment forgot its hints (``LMDBEnvironment/deleteDatabases(_:in:)``); so does
        // this write, which must not name the deleted databases' handles to the next.
        handles.hints = LMDBEnvironment.WriteHints()
        handles.hintsConfirmed = false
        handles.used = LMDBEnvironment.WriteHints()
        handles.indexes.removeAll { $0.entity == name }
        handles.lastPut = nil
        appending.target = nil
    }

    /// Creates (or checks) the metadata of the store; run by the first write on open.
    func prepareStore() throws {
        try perform(.prepareStore)
    }

    // MARK: - Applying operations

    /// Stores `row` under `id` and updates the entity's indexes. With `onlyNew` (an insert),
    /// returns false, writing nothing at all, when a row has that id.
    func applyPut(_ entityIndex: Int, id: Value, row: Row, onlyNew: Bool, previous: Row? = nil) throws -> Bool {
        let (rows, indexed, floor) = try putTarget(entityIndex)
        return try KeyEncoding.withEncoded(id) { key in
            var old: Row?
            if onlyNew {
                guard try putRow(rows, key, row, floor: floor, onlyNew: true) else { return false }
                // After the row, so that an index this description adds is built including it
                // (writing its entry again below is harmless).
                try ensureEntity(entityIndex)
            } else {
                try ensureEntity(entityIndex)
                if indexed {
                    if let previous {
                        old = previous
                    } else if let bytes = try get(rows, key) {
                        old = try? decodeRow(bytes, entity: replay.entities[entityIndex].name, key: key)
                    }
                }
                _ = try putRow(rows, key, row, floor: floor, onlyNew: false)
            }
            guard indexed else { return true }
            let entity = replay.entities[entityIndex]
            for column in entity.indexes {
                guard let index = try indexDatabase(entity.name, column, create: true) else { continue }
                let value = row.value(column)
                if let old {
                    let previous = old.value(column)
                    // Values that compare equal encode identically: the entry stays.
                    if Value.compare(previous, value) == 0 { continue }
                    try withIndexKey(previous, id: key) { try del(index, $0) }
                }
                try withIndexKey(value, id: key) { try putEmpty(index, $0) }
            }
            return true
        }
    }

    /// The row database of the entity at `entityIndex` in the replay log's entities (created when
    /// missing), whether it has indexes and the least layout number its rows may name (its
    /// newest rename watermark, ``RenameHistory/floor``); kept for the next put, which in a bulk
    /// write goes to the same entity, so that it neither copies the description nor looks its
    /// name up.
    @inline(__always)
    func putTarget(_ entityIndex: Int) throws -> (rows: MDB_dbi, indexed: Bool, floor: UInt32) {
        if let last = handles.lastPut, last.entity == entityIndex { return (last.rows, last.indexed, last.floor) }
        let entity = replay.entities[entityIndex]
        guard let rows = try rowsDatabase(entity.name, create: true) else {
            throw ReservoirError(.backend, "\(lmdbStore(path)): the row database of \"\(entity.name)\" could not be created")
        }
        let floor = try renameHistory(entity.name)?.floor ?? 0
        handles.lastPut = (entityIndex, rows, !entity.indexes.isEmpty, floor)
        return (rows, !entity.indexes.isEmpty, floor)
    }

    func applyDelete(_ entity: EntityDescription, id: Value) throws {
        guard let rows = try rowsDatabase(entity.name) else { return }
        try KeyEncoding.withEncoded(id) { key in
            guard let bytes = try get(rows, key) else { return }
            let stored = try storedDescription(entity.name) ?? entity
            // A row that cannot be decoded is still deleted; its index entries then point
            // nowhere, which lookups skip.
            let old = stored.indexes.isEmpty ? nil : try? decodeRow(bytes, entity: entity.name, key: key)
            try del(rows, key)
            guard let old else { return }
            for column in stored.indexes {
                guard let index = try indexDatabase(entity.name, column) else { continue }
                try withIndexKey(old.value(column), id: key) { try del(index, $0) }
            }
        }
    }

}
