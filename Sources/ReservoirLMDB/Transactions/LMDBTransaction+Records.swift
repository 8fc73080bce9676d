import CLMDB
import Foundation
import Reservoir

/// What a write knows about appending to a row database: records usually arrive in key
/// order (ascending integer ids), and a key above every key in the database is put with
/// `MDB_APPEND` (see ``LMDBTransaction/putRow(_:_:_:floor:onlyNew:)``). Confined to the writing thread.
struct Appending {
    enum State {
        /// Nothing known of the database yet: the next put tries `MDB_APPEND`.
        case untried
        /// ``Appending/bound`` is at least the greatest key: a greater key is appended.
        case bounded
        /// Keys did not arrive in order: plain puts for the rest of the transaction.
        case off
    }

    /// The row database rows were last put into (nil after the LMDB transaction ended).
    var target: MDB_dbi?
    var state = State.untried
    /// An upper bound of the greatest key of ``target``, when ``state`` is `.bounded`.
    var bound: [UInt8] = []
}

/// Record access shared by the read and write roles, in this transaction's terms: its
/// handle caches, its row layouts, and the path in its messages.
extension LMDBTransaction {
    // MARK: - Records

    /// The value stored under `key`, valid until the transaction changes or ends.
    func get(_ dbi: MDB_dbi, _ key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { try get(dbi, $0) }
    }

    @inline(__always)
    func get(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        try liveTransaction().get(dbi, key)
    }

    func put(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in try liveTransaction().put(dbi, k, v, "write a record") }
        }
    }

    /// Stores an empty value under `key` (an index entry).
    func putEmpty(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws {
        var none: UInt8 = 0
        // A non-null pointer with no bytes, as LMDB's own examples pass an empty value.
        try withUnsafePointer(to: &none) { empty in
            try liveTransaction().put(dbi, key, UnsafeRawBufferPointer(start: empty, count: 0), "write an index entry")
        }
    }

    /// Stores `row` under `key`, encoding it straight into the page LMDB reserves for it.
    /// With `onlyNew`, stores nothing and returns false when the key exists (`MDB_NOOVERWRITE`).
    ///
    /// A key above every key in the database is put with `MDB_APPEND`: LMDB then goes
    /// straight to the last page instead of searching each page on the way down, and fills
    /// pages instead of splitting them in half. The first put into a database tries it; LMDB
    /// refuses a key that is not above its last one with `MDB_KEYEXIST`, and the put is made
    /// again plainly (so an insert still learns whether the key exists). While keys keep
    /// ascending, the last one appended bounds the database's keys, and the order is checked
    /// here instead. Deletes only lower the true maximum, so the bound stays safe.
    func putRow(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ row: Row, floor: UInt32, onlyNew: Bool) throws -> Bool {
        let layout = try writeLayout(row.columns, floor: floor)
        let size = RowCodec.encodedSize(row, layout: layout)
        func encode(_ base: UnsafeMutablePointer<UInt8>) -> Int { RowCodec.write(row, layout: layout, to: base) }
        if appending.target != dbi {
            appending.target = dbi
            appending.state = .untried
        }
        let append: Bool
        switch appending.state {
        case .untried: append = true
        case .bounded: append = appending.bound.withUnsafeBytes { compareBytes(key, $0) > 0 }
        case .off: append = false
        }
        if append {
            if try putReserved(dbi, key, size: size, flags: CLMDB_APPEND, refused: true, "write a record", encode) {
                appending.state = .bounded
                if appending.bound.count == key.count {
                    appending.bound.withUnsafeMutableBytes { $0.copyMemory(from: key) }
                } else {
                    appending.bound = Array(key)
                }
                return true
            }
            appending.state = .off
        }
        return try putReserved(dbi, key, size: size, flags: onlyNew ? CLMDB_NOOVERWRITE : 0, refused: onlyNew, "write a record", encode)
    }

    /// Stores `size` bytes under `key` that `write` writes straight into the page LMDB
    /// reserves for them (`MDB_RESERVE`: no intermediate buffer), returning how many it wrote.
    /// `flags` adds `MDB_NOOVERWRITE` or `MDB_APPEND`; with `refused`, LMDB refusing the
    /// key (`MDB_KEYEXIST`) stores nothing and returns false instead of throwing.
    @inline(__always)
    func putReserved(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, size: Int, flags: UInt32, refused: Bool,
                     _ what: @autoclosure () -> String, _ write: (UnsafeMutablePointer<UInt8>) -> Int) throws -> Bool {
        guard let reserved = try liveTransaction().reserve(dbi, key, size: size, flags: flags, refused: refused, what()) else {
            return false
        }
        guard let base = reserved.mv_data, reserved.mv_size == size else {
            throw ReservoirError(.backend, "\(lmdbStore(path)): LMDB reserved \(reserved.mv_size) bytes for \(size) to \(what())")
        }
        let written = write(base.assumingMemoryBound(to: UInt8.self))
        assert(written == size, "the size computed beforehand and the bytes written disagree")
        return true
    }

    func del(_ dbi: MDB_dbi, _ key: [UInt8]) throws {
        try key.withUnsafeBytes { try del(dbi, $0) }
    }

    func del(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws {
        try liveTransaction().delete(dbi, key)
    }

    /// Calls `visit` with the key and value, as stored, of each of `keys` that `dbi` holds,
    /// through one cursor.
    func lookUp(_ dbi: MDB_dbi, _ keys: [UnsafeRawBufferPointer],
                _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) throws {
        try liveTransaction().withCursor(dbi, "open a cursor") { cursor in
            for wanted in keys {
                guard let found = try cursor.seek(exactly: wanted) else { continue }
                try visit(found.key, found.value)
            }
        }
    }

    /// Visits keys (and values) from the first key at or after `start` (the first key
    /// when nil) in key order, or backwards from the last key when `reverse`, while `visit`
    /// returns true.
    func scan(_ dbi: MDB_dbi, from start: [UInt8]? = nil, reverse: Bool = false,
              _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws {
        try liveTransaction().withCursor(dbi, "open a cursor") { cursor in
            var record: MDBCursor.Record?
            if let start {
                record = try start.withUnsafeBytes { try cursor.seek(atOrAfter: $0) }
            } else {
                record = reverse ? try cursor.last() : try cursor.first()
            }
            while let current = record {
                guard try visit(current.key, current.value) else { return }
                record = reverse ? try cursor.previous() : try cursor.next()
            }
        }
    }

    /// The number of records in a named database.
    func entryCount(_ dbi: MDB_dbi) throws -> Int {
        let txn = try liveTransaction()
        let count = Int(try txn.stat(dbi, "count records").ms_entries)
        guard count > 0 else { return 0 }
        // A database another process deleted (a migration's renamed or merged entity) while
        // this one kept its handle: `mdb_stat` then reports whatever its slot last held, but
        // every cursor finds it gone.
        return try txn.withCursor(dbi, "count records") { try $0.first() } == nil ? 0 : count
    }

    // MARK: - Keys

    /// The row key of `id`; throws `.valueOutOfRange` when it is longer than LMDB keys may be.
    func idKey(_ id: Value, entity: String) throws -> [UInt8] {
        let key = KeyEncoding.encode(id)
        guard key.count < environment.maxKeySize else {
            throw ReservoirError(.valueOutOfRange, "\(lmdbStore(path)): the id \(id) of a \"\(entity)\" record encodes to \(key.count) bytes; LMDB keys hold at most \(environment.maxKeySize - 1) here (use shorter ids)")
        }
        return key
    }

    /// Whether `id` encodes to a key LMDB can hold; numbers and null always do.
    func fitsKey(_ id: Value) -> Bool {
        switch id {
        case .null, .integer, .real: KeyEncoding.maxFixedLength < environment.maxKeySize
        case .text, .blob: KeyEncoding.encode(id).count < environment.maxKeySize
        }
    }

    /// Calls `body` with the index key of `value` for the record whose row key is `id`,
    /// built in a reused buffer: the value's encoding then the id's, or, when that is too
    /// long for an LMDB key, the overlong marker then the id.
    func withIndexKey<R>(_ value: Value, id: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var key: [UInt8] = []
        swap(&key, &keyScratch)
        defer { swap(&key, &keyScratch) }
        key.removeAll(keepingCapacity: true)
        KeyEncoding.append(value, to: &key)
        key.append(contentsOf: id)
        if key.count > environment.maxKeySize {
            key.removeAll(keepingCapacity: true)
            key.append(KeyEncoding.overlongTag)
            key.append(contentsOf: id)
        }
        return try key.withUnsafeBytes(body)
    }

    // MARK: - Rows and descriptions

    func decodeRow(_ bytes: UnsafeRawBufferPointer, entity: String, key: UnsafeRawBufferPointer) throws -> Row {
        if let row = try rowCoding.reader.decode(bytes, renames: renameHistory(entity), layouts: layout) { return row }
        throw corruptRow(bytes, entity: entity, key: key)
    }

    /// The error for a stored row that does not decode, naming the entity and the id.
    func corruptRow(_ bytes: UnsafeRawBufferPointer, entity: String, key: UnsafeRawBufferPointer) -> ReservoirError {
        let id = KeyEncoding.decode(key).map(\.description) ?? "x'" + key.map { String(format: "%02x", $0) }.joined() + "'"
        let version = bytes.first.map { "version byte \($0)" } ?? "empty"
        return ReservoirError(.corrupt, "\(lmdbStore(path)): the row of \"\(entity)\" with id \(id) cannot be decoded (\(version), \(bytes.count) bytes); this library reads row formats \(RowCodec.namedVersion) and \(RowCodec.version)")
    }

    /// The entity's description as last written, or nil when it was never written.
    func storedDescription(_ entity: String) throws -> EntityDescription? {
        if let last = descriptions.last, last.entity == entity { return last.description }
        var result: EntityDescription?
        if !descriptions.written.isEmpty, let mine = descriptions.written[entity] {
            result = mine
        } else if let cached = environment.cachedDescription(entity, at: snapshot.id) {
            // Not changed by this transaction, so as of the snapshot's commit.
            result = cached
        } else {
            guard let meta = try database(StoreFormat.metaDatabase) else { return nil }
            if let bytes = try get(meta, StoreFormat.entityKey(entity)) {
                guard let decoded = StoreFormat.decodeEntity(bytes) else {
                    throw ReservoirError(.corrupt, "\(lmdbStore(path)): the stored description of entity \"\(entity)\" cannot be decoded")
                }
                result = decoded
            }
            environment.cacheDescription(entity, result, at: snapshot.id)
        }
        descriptions.last = (entity, result)
        return result
    }
}
