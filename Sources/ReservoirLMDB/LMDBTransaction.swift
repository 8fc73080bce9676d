import CLMDB
import Foundation
import Reservoir

/// One LMDB transaction (`MDB_txn`), read-only or the write transaction.
///
/// A write records every operation it performs. When LMDB reports the map full
/// (`MDB_MAP_FULL`, from a put or from the commit), the transaction is aborted, the map
/// grown, a new LMDB transaction begun on the same snapshot and the recorded
/// operations replayed, so the caller's closure runs exactly once and nothing is lost
/// or doubled. The writer locks stay held throughout, so no other writer can commit in
/// between; should one have (a tool outside this library), the write fails with `.busy`
/// and nothing is committed. Replaying on the same snapshot gives every operation the
/// outcome it had, so an insert that stored its row stores it again.
final class LMDBTransaction: WriteTransaction {
    enum Operation {
        /// `entity` indexes ``operationEntities``: one copy of each description, not one per
        /// row. Ids are kept as values (no allocation for numbers) and encoded when applied.
        case put(entity: Int, id: Value, row: Row)
        /// An insert that stored its row; one that found its id taken wrote nothing and is
        /// not kept.
        case insert(entity: Int, id: Value, row: Row)
        case delete(entity: Int, id: Value)
        case record(ChangeSet)
        case prepareStore
    }

    let environment: LMDBEnvironment
    let isWrite: Bool
    // @exclusivity(unchecked) below: see ChangeHub (the suite ran clean with the checks on).
    @exclusivity(unchecked) private(set) var txn: OpaquePointer?
    @exclusivity(unchecked) private var inGate = false
    /// Handles valid in this transaction: committed before it began (nil: not a database).
    @exclusivity(unchecked) private var handles: [String: MDB_dbi?]
    /// Handles this write transaction opened; they become shared when it commits.
    @exclusivity(unchecked) private var opened: [String: MDB_dbi] = [:]
    /// Descriptions this write transaction stored; they override the snapshot's.
    @exclusivity(unchecked) private var written: [String: EntityDescription] = [:]
    /// The description looked up last: repeated lookups skip the environment's lock.
    @exclusivity(unchecked) private var lastDescription: (entity: String, description: EntityDescription?)?
    /// Row databases by entity name, and index databases by entity and column.
    @exclusivity(unchecked) private var rowHandles: [String: MDB_dbi] = [:]
    @exclusivity(unchecked) private var lastRows: (entity: String, handle: MDB_dbi)?
    /// Appending: the row database rows were last put into, and what this transaction
    /// knows of its greatest key (see ``putRow(_:_:_:onlyNew:)``).
    @exclusivity(unchecked) private var appendTarget: MDB_dbi?
    @exclusivity(unchecked) private var appendState = AppendState.untried
    /// An upper bound of the greatest key of ``appendTarget``, when `appendState` is `.bounded`.
    @exclusivity(unchecked) private var appendBound: [UInt8] = []
    /// The description the last put made sure of, as an index into ``operationEntities``.
    @exclusivity(unchecked) private var lastEnsured: Int?
    /// Reused for encoding index keys.
    @exclusivity(unchecked) private var keyScratch: [UInt8] = []
    @exclusivity(unchecked) private var indexHandles: [String: [String: MDB_dbi]] = [:]
    /// The change log's handle, once looked up: every commit reads and writes it.
    @exclusivity(unchecked) private var logHandle: MDB_dbi?
    /// The sequence this write transaction logged, once it has.
    @exclusivity(unchecked) private var recordedSequence: UInt64?
    /// Decodes rows, keeping the last layout it met.
    @exclusivity(unchecked) var reader = RowReader()
    /// Layouts this write transaction stored; they join the environment's registry when it commits.
    @exclusivity(unchecked) var addedLayouts: [RowLayout] = []
    /// The columns of the last row put, and the number of the layout it was written in.
    @exclusivity(unchecked) var lastWrittenColumns: [String] = []
    @exclusivity(unchecked) var lastWrittenNumber: UInt32?

    // Write state.
    @exclusivity(unchecked) private var operations: [Operation] = []
    @exclusivity(unchecked) private var operationEntities: [EntityDescription] = []
    /// The ``EntityDescription/identity`` of the last of ``operationEntities``.
    @exclusivity(unchecked) private var lastOperationIdentity: ObjectIdentifier?
    /// The entity the last put went to, as an index into ``operationEntities``, its row
    /// database, and whether it has indexes (see ``putTarget(_:)``).
    @exclusivity(unchecked) private var lastPutTarget: (entity: Int, rows: MDB_dbi, indexed: Bool)?
    @exclusivity(unchecked) private var startID = 0
    /// The id of the commit this transaction's snapshot shows.
    @exclusivity(unchecked) private var snapshotID = 0
    @exclusivity(unchecked) private var poisoned: ReservoirError?

    var path: String { environment.path }

    private init(environment: LMDBEnvironment, isWrite: Bool) {
        self.environment = environment
        self.isWrite = isWrite
        self.handles = [:]
    }

    deinit { end() }

    // MARK: - Lifecycle

    /// Begins a read transaction whose handles cover every named database in its snapshot.
    static func beginRead(in environment: LMDBEnvironment) throws -> LMDBTransaction {
        let transaction = LMDBTransaction(environment: environment, isWrite: false)
        var refreshes = 0
        while true {
            try environment.enter()
            let (known, rows) = environment.committedHandlesAndRows()
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(environment.env, nil, CLMDB_RDONLY, &txn)
            if rc == CLMDB_MAP_RESIZED {
                environment.exit()
                try environment.adoptMapSize()
                continue
            }
            guard rc == 0, let txn else {
                environment.exit()
                throw LMDBErrors.error(code: rc, "lmdb:\(environment.path): cannot begin a read transaction")
            }
            do {
                try environment.checkNotTruncated()
            } catch {
                mdb_txn_abort(txn)
                environment.exit()
                throw error
            }
            var stat = MDB_stat()
            let statRC = mdb_stat(txn, CLMDB_MAIN_DBI, &stat)
            if statRC == 0 && stat.ms_entries <= known.count {
                transaction.txn = txn
                transaction.inGate = true
                transaction.handles = known
                transaction.rowHandles = rows
                transaction.snapshotID = mdb_txn_id(txn)
                return transaction
            }
            mdb_txn_abort(txn)
            environment.exit()
            try check(statRC, "read the list of named databases")
            refreshes += 1
            if refreshes > 50 {
                throw ReservoirError(.backend, "lmdb:\(environment.path): the list of named databases kept changing while opening a read transaction")
            }
            try environment.refreshHandles()
        }
    }

    /// Begins the write transaction. The caller holds the environment's writer locks.
    convenience init(writingIn environment: LMDBEnvironment) throws {
        self.init(environment: environment, isWrite: true)
        try LMDBErrors.convert(path: environment.path) { try beginWriteTransaction() }
        if let txn {
            startID = mdb_txn_id(txn)
            snapshotID = startID - 1
        }
    }

    private func beginWriteTransaction() throws {
        while true {
            try environment.enter()
            (handles, rowHandles) = environment.committedHandlesAndRows()
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(environment.env, nil, 0, &txn)
            if rc == CLMDB_MAP_RESIZED {
                environment.exit()
                try environment.adoptMapSize()
                continue
            }
            guard rc == 0, let txn else {
                environment.exit()
                throw LMDBFailure(code: rc, operation: "begin a write transaction")
            }
            self.txn = txn
            inGate = true
            try environment.checkNotTruncated()  // end() aborts the transaction
            return
        }
    }

    /// Aborts the transaction if it is still open and leaves the gate. Safe to call twice.
    func end() {
        // Already ended (a commit ends before deinit does): the caches were cleared then.
        guard txn != nil || inGate else { return }
        if let txn {
            mdb_txn_abort(txn)
            self.txn = nil
        }
        opened = [:]
        written = [:]
        lastDescription = nil
        rowHandles = [:]
        lastRows = nil
        appendTarget = nil
        lastEnsured = nil
        addedLayouts = []
        lastWrittenColumns = []
        lastWrittenNumber = nil
        lastPutTarget = nil
        indexHandles = [:]
        logHandle = nil
        if inGate {
            inGate = false
            environment.exit()
        }
    }

    /// Commits the write transaction, growing the map and replaying when it is full.
    func commit() throws {
        if let poisoned { throw poisoned }
        while true {
            guard let txn else {
                throw ReservoirError(.misuse, "lmdb:\(path): commit of a transaction that has ended")
            }
            let rc = mdb_txn_commit(txn)
            self.txn = nil  // freed by LMDB whatever the outcome
            let committed = opened
            let changed = written
            let layouts = addedLayouts
            end()
            if rc == 0 {
                if !committed.isEmpty { environment.addHandles(committed.mapValues { Optional($0) }) }
                if !layouts.isEmpty { environment.layouts.add(layouts) }
                environment.advanceDescriptions(from: snapshotID, to: startID, changed: changed, recorded: recordedSequence)
                return
            }
            guard rc == CLMDB_MAP_FULL else {
                throw environment.diagnoseWriteFailure(code: rc, "lmdb:\(path): cannot commit the write transaction; nothing was committed")
            }
            try rebuild(grow: true)
        }
    }

    // MARK: - Recording and replaying writes

    /// Applies `operation` and records it; on a full map, grows and replays everything.
    /// Returns what applying it returned: for an insert, whether it stored the row.
    @discardableResult
    private func perform(_ operation: Operation) throws -> Bool {
        try perform(operation) { try apply(operation) }
    }

    /// ``perform(_:)`` with `body` applying `operation`: callers pass their arguments to
    /// the apply function directly, so the operation is only built (its row retained) to
    /// be kept in the log, once it has been applied (or the map filled while applying it).
    @discardableResult @inline(__always)
    private func perform(_ operation: @autoclosure () -> Operation, _ body: () throws -> Bool) throws -> Bool {
        if let poisoned { throw poisoned }
        guard txn != nil else {
            throw ReservoirError(.misuse, "lmdb:\(path): the write transaction has ended")
        }
        do {
            // An insert that found its id wrote nothing: nothing to replay.
            let done = try body()
            if done { operations.append(operation()) }
            return done
        } catch let failure as LMDBFailure where failure.code == CLMDB_MAP_FULL {
            operations.append(operation())
            let done = try rebuild(grow: true)
            if !done { operations.removeLast() }
            return done
        } catch {
            // Undo the half-applied operation by replaying the others on a fresh transaction.
            let reported = (error as? LMDBFailure).map { LMDBErrors.error($0, path: path) } ?? error
            do {
                try rebuild(grow: false)
            } catch {
                poisoned = (error as? ReservoirError) ?? ReservoirError(.backend, "lmdb:\(path): \(error)")
            }
            throw reported
        }
    }

    /// Ends the LMDB transaction, optionally grows the map, begins again on the same
    /// snapshot and replays the recorded operations. Returns what the last one returned.
    @discardableResult
    private func rebuild(grow: Bool) throws -> Bool {
        var grow = grow
        do {
            while true {
                end()
                if grow { try environment.growMap() }
                try LMDBErrors.convert(path: path) { try beginWriteTransaction() }
                guard let txn, mdb_txn_id(txn) == startID else {
                    throw ReservoirError(.busy, "lmdb:\(path): another writer outside this library committed while the map was growing; this transaction was rolled back, run it again")
                }
                do {
                    var last = true
                    // Set again by the record operation, if it is among those replayed.
                    recordedSequence = nil
                    for operation in operations { last = try apply(operation) }
                    return last
                } catch let failure as LMDBFailure where failure.code == CLMDB_MAP_FULL {
                    grow = true
                }
            }
        } catch {
            end()
            let failure = (error as? LMDBFailure).map { LMDBErrors.error($0, path: path) }
                ?? (error as? ReservoirError) ?? ReservoirError(.backend, "lmdb:\(path): \(error)")
            poisoned = failure
            throw failure
        }
    }

    /// Applies one operation; false only for an insert whose id was taken.
    private func apply(_ operation: Operation) throws -> Bool {
        switch operation {
        case let .put(entity, id, row): return try applyPut(entity, id: id, row: row, onlyNew: false)
        case let .insert(entity, id, row): return try applyPut(entity, id: id, row: row, onlyNew: true)
        case let .delete(entity, id): try applyDelete(operationEntities[entity], id: id)
        case let .record(changeSet): try applyRecord(changeSet)
        case .prepareStore: try applyPrepareStore()
        }
        return true
    }

    // MARK: - Low-level access

    /// The handle of a named database, or nil when it does not exist (and `create` is false).
    func database(_ name: String, create: Bool = false) throws -> MDB_dbi? {
        if let known = handles[name] { return known }
        if let handle = opened[name] { return handle }
        guard isWrite, let txn else { return nil }
        var dbi = MDB_dbi()
        let rc = mdb_dbi_open(txn, name, create ? CLMDB_CREATE : 0, &dbi)
        if rc == CLMDB_NOTFOUND { return nil }
        try check(rc, "open the named database \"\(name)\"")
        opened[name] = dbi
        return dbi
    }

    /// The change log's database (cached).
    func logDatabase(create: Bool = false) throws -> MDB_dbi? {
        if let logHandle { return logHandle }
        logHandle = try database(Catalog.logDatabase, create: create)
        return logHandle
    }

    /// The row database of `entity` (cached by entity name).
    func rowsDatabase(_ entity: String, create: Bool = false) throws -> MDB_dbi? {
        // Most transactions touch one entity: skip hashing its name.
        if let last = lastRows, last.entity == entity { return last.handle }
        if let handle = rowHandles[entity] {
            lastRows = (entity, handle)
            return handle
        }
        guard let handle = try database(Catalog.rowsDatabase(entity), create: create) else { return nil }
        rowHandles[entity] = handle
        lastRows = (entity, handle)
        return handle
    }

    /// The index database of `entity`'s `column` (cached).
    func indexDatabase(_ entity: String, _ column: String, create: Bool = false) throws -> MDB_dbi? {
        if let handle = indexHandles[entity]?[column] { return handle }
        guard let handle = try database(Catalog.indexDatabase(entity, column), create: create) else { return nil }
        indexHandles[entity, default: [:]][column] = handle
        return handle
    }

    func liveTransaction() throws -> OpaquePointer {
        if let poisoned { throw poisoned }
        guard let txn else {
            throw ReservoirError(.misuse, "lmdb:\(path): a transaction was used after it ended; use it only inside its closure")
        }
        return txn
    }

    /// The value stored under `key`, valid until the transaction changes or ends.
    func get(_ dbi: MDB_dbi, _ key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { try get(dbi, $0) }
    }

    func get(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        let txn = try liveTransaction()
        var data = MDB_val()
        var k = clmdb_val(key.baseAddress, key.count)
        let rc = mdb_get(txn, dbi, &k, &data)
        if rc == CLMDB_NOTFOUND { return nil }
        try check(rc, "read a record")
        return UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
    }

    func put(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in try put(dbi, k, v) }
        }
    }

    func put(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws {
        let txn = try liveTransaction()
        var mk = clmdb_val(key.baseAddress, key.count)
        var mv = clmdb_val(value.baseAddress, value.count)
        try check(mdb_put(txn, dbi, &mk, &mv, 0), "write a record")
    }

    /// Stores an empty value under `key` (an index entry).
    func putEmpty(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws {
        let txn = try liveTransaction()
        var none: UInt8 = 0
        var mk = clmdb_val(key.baseAddress, key.count)
        var mv = clmdb_val(&none, 0)
        try check(mdb_put(txn, dbi, &mk, &mv, 0), "write an index entry")
    }

    enum AppendState {
        /// Nothing known of the database yet: the next put tries `MDB_APPEND`.
        case untried
        /// ``appendBound`` is at least the greatest key: a greater key is appended.
        case bounded
        /// Keys did not arrive in order: plain puts for the rest of the transaction.
        case off
    }

    /// Stores `row` under `key`, encoding it straight into the page LMDB reserves for it.
    /// With `onlyNew`, stores nothing and returns false when the key exists (`MDB_NOOVERWRITE`).
    ///
    /// Records usually arrive in key order (ascending integer ids), and a key above every
    /// key in the database is put with `MDB_APPEND`: LMDB then goes straight to the last
    /// page instead of searching each page on the way down, and fills pages instead of
    /// splitting them in half. The first put into a database tries it; LMDB refuses a key
    /// that is not above its last one with `MDB_KEYEXIST`, and the put is made again plainly
    /// (so an insert still learns whether the key exists). While keys keep ascending, the
    /// last one appended bounds the database's keys, and the order is checked here instead.
    /// Deletes only lower the true maximum, so the bound stays safe.
    func putRow(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ row: Row, onlyNew: Bool) throws -> Bool {
        let layout = try writeLayout(row.columns)
        let size = RowCodec.encodedSize(row, layout: layout)
        func encode(_ base: UnsafeMutablePointer<UInt8>) -> Int { RowCodec.write(row, layout: layout, to: base) }
        if appendTarget != dbi {
            appendTarget = dbi
            appendState = .untried
        }
        let append: Bool
        switch appendState {
        case .untried: append = true
        case .bounded: append = appendBound.withUnsafeBytes { compareBytes(key, $0) > 0 }
        case .off: append = false
        }
        if append {
            if try putReserved(dbi, key, size: size, flags: CLMDB_APPEND, refused: true, "write a record", encode) {
                appendState = .bounded
                if appendBound.count == key.count {
                    appendBound.withUnsafeMutableBytes { $0.copyMemory(from: key) }
                } else {
                    appendBound = Array(key)
                }
                return true
            }
            appendState = .off
        }
        return try putReserved(dbi, key, size: size, flags: onlyNew ? CLMDB_NOOVERWRITE : 0, refused: onlyNew, "write a record", encode)
    }

    /// Stores `size` bytes under `key` that `write` writes straight into the page LMDB
    /// reserves for them (`MDB_RESERVE`: no intermediate buffer), returning how many it wrote.
    /// `flags` adds `MDB_NOOVERWRITE` or `MDB_APPEND`; with `refused`, LMDB refusing the
    /// key (`MDB_KEYEXIST`) stores nothing and returns false instead of throwing.
    @inline(__always)
    private func putReserved(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, size: Int, flags: UInt32, refused: Bool,
                             _ what: @autoclosure () -> String, _ write: (UnsafeMutablePointer<UInt8>) -> Int) throws -> Bool {
        let txn = try liveTransaction()
        var mk = clmdb_val(key.baseAddress, key.count)
        var mv = clmdb_val(nil, size)
        let rc = mdb_put(txn, dbi, &mk, &mv, UInt32(MDB_RESERVE) | flags)
        if refused && rc == MDB_KEYEXIST { return false }
        try check(rc, what())
        guard let base = mv.mv_data, mv.mv_size == size else {
            throw ReservoirError(.backend, "lmdb:\(path): LMDB reserved \(mv.mv_size) bytes for \(size) to \(what())")
        }
        let written = write(base.assumingMemoryBound(to: UInt8.self))
        assert(written == size, "the size computed beforehand and the bytes written disagree")
        return true
    }

    func del(_ dbi: MDB_dbi, _ key: [UInt8]) throws {
        try key.withUnsafeBytes { try del(dbi, $0) }
    }

    func del(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws {
        let txn = try liveTransaction()
        var mk = clmdb_val(key.baseAddress, key.count)
        let rc = mdb_del(txn, dbi, &mk, nil)
        if rc == CLMDB_NOTFOUND { return }
        try check(rc, "delete a record")
    }

    /// Calls `visit` with the key and value, as stored, of each of `keys` that `dbi` holds,
    /// through one cursor.
    func lookUp(_ dbi: MDB_dbi, _ keys: some Sequence<[UInt8]>,
                _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) throws {
        let txn = try liveTransaction()
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "open a cursor")
        defer { mdb_cursor_close(cursor) }
        for wanted in keys {
            var key = MDB_val()
            var data = MDB_val()
            let rc = wanted.withUnsafeBytes { raw -> Int32 in
                key = clmdb_val(raw.baseAddress, raw.count)
                return mdb_cursor_get(cursor, &key, &data, MDB_SET_KEY)
            }
            if rc == CLMDB_NOTFOUND { continue }
            try check(rc, "read a record")
            try visit(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                      UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
        }
    }

    /// Visits keys (and values) from the first key at or after `start` (the first key
    /// when nil) in key order, or backwards from the last key when `reverse`, while `visit`
    /// returns true.
    func scan(_ dbi: MDB_dbi, from start: [UInt8]? = nil, reverse: Bool = false,
              _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws {
        let txn = try liveTransaction()
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "open a cursor")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var data = MDB_val()
        var rc: Int32
        if let start {
            rc = start.withUnsafeBytes { raw -> Int32 in
                key = clmdb_val(raw.baseAddress, raw.count)
                return mdb_cursor_get(cursor, &key, &data, MDB_SET_RANGE)
            }
        } else {
            rc = mdb_cursor_get(cursor, &key, &data, reverse ? MDB_LAST : MDB_FIRST)
        }
        let step = reverse ? MDB_PREV : MDB_NEXT
        while rc == 0 {
            let more = try visit(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                                 UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
            if !more { return }
            rc = mdb_cursor_get(cursor, &key, &data, step)
        }
        if rc != CLMDB_NOTFOUND { try check(rc, "read with a cursor") }
    }

    /// The number of records in a named database.
    func entryCount(_ dbi: MDB_dbi) throws -> Int {
        let txn = try liveTransaction()
        var stat = MDB_stat()
        try check(mdb_stat(txn, dbi, &stat), "count records")
        return Int(stat.ms_entries)
    }

    // MARK: - Rows and descriptions

    func decodeRow(_ bytes: UnsafeRawBufferPointer, entity: String, key: UnsafeRawBufferPointer) throws -> Row {
        if let row = try reader.decode(bytes, layouts: layout) { return row }
        throw corruptRow(bytes, entity: entity, key: key)
    }

    /// The error for a stored row that does not decode, naming the entity and the id.
    func corruptRow(_ bytes: UnsafeRawBufferPointer, entity: String, key: UnsafeRawBufferPointer) -> ReservoirError {
        let id = KeyEncoding.decode(key).map(\.description) ?? "x'" + key.map { String(format: "%02x", $0) }.joined() + "'"
        let version = bytes.first.map { "version byte \($0)" } ?? "empty"
        return ReservoirError(.corrupt, "lmdb:\(path): the row of \"\(entity)\" with id \(id) cannot be decoded (\(version), \(bytes.count) bytes); this library reads row formats \(RowCodec.namedVersion) and \(RowCodec.version)")
    }

    /// The entity's description as last written, or nil when it was never written.
    func storedDescription(_ entity: String) throws -> EntityDescription? {
        if let last = lastDescription, last.entity == entity { return last.description }
        var result: EntityDescription?
        if !written.isEmpty, let mine = written[entity] {
            result = mine
        } else if let cached = environment.cachedDescription(entity, at: snapshotID) {
            // Not changed by this transaction, so as of the snapshot's commit.
            result = cached
        } else {
            guard let meta = try database(Catalog.metaDatabase) else { return nil }
            if let bytes = try get(meta, Catalog.entityKey(entity)) {
                guard let decoded = Catalog.decodeEntity(bytes) else {
                    throw ReservoirError(.corrupt, "lmdb:\(path): the stored description of entity \"\(entity)\" cannot be decoded")
                }
                result = decoded
            }
            environment.cacheDescription(entity, result, at: snapshotID)
        }
        lastDescription = (entity, result)
        return result
    }

    /// The row key of `id`; throws `.valueOutOfRange` when it is longer than LMDB keys may be.
    func idKey(_ id: Value, entity: String) throws -> [UInt8] {
        let key = KeyEncoding.encode(id)
        guard key.count < environment.maxKeySize else {
            throw ReservoirError(.valueOutOfRange, "lmdb:\(path): the id \(id) of a \"\(entity)\" record encodes to \(key.count) bytes; LMDB keys hold at most \(environment.maxKeySize - 1) here (use shorter ids)")
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
    private func withIndexKey<R>(_ value: Value, id: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
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

    // MARK: - ReadTransaction

    func row(_ entity: String, id: Value) throws -> Row? {
        try LMDBErrors.convert(path: path) {
            guard let rows = try rowsDatabase(entity) else { return nil }
            return try KeyEncoding.withEncoded(id) { key -> Row? in
                guard key.count < environment.maxKeySize, let bytes = try get(rows, key) else { return nil }
                return try decodeRow(bytes, entity: entity, key: key)
            }
        }
    }

    func entities() throws -> [EntityDescription] {
        try LMDBErrors.convert(path: path) {
            guard let meta = try database(Catalog.metaDatabase) else { return [] }
            var found: [EntityDescription] = []
            let prefix = Catalog.entityKeyPrefix
            try scan(meta, from: prefix) { key, value in
                guard key.starts(with: prefix) else { return false }
                guard let entity = Catalog.decodeEntity(value) else {
                    throw ReservoirError(.corrupt, "lmdb:\(path): a stored entity description cannot be decoded")
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

    func lastSequence() throws -> UInt64 {
        if let recordedSequence { return recordedSequence }
        if let cached = environment.cachedSequence(at: snapshotID) { return cached }
        let newest = try newestLoggedSequence()
        environment.cacheSequence(newest, at: snapshotID)
        return newest
    }

    /// The newest sequence in the change log, read with a cursor.
    private func newestLoggedSequence() throws -> UInt64 {
        try LMDBErrors.convert(path: path) {
            // Retention always keeps the newest record, so the log's last key is the newest sequence.
            guard let log = try logDatabase() else { return 0 }
            var newest: UInt64?
            var damaged = false
            try scan(log, reverse: true) { key, _ in
                newest = Catalog.readBigEndian(key)
                damaged = newest == nil
                return false
            }
            if damaged {
                throw ReservoirError(.corrupt, "lmdb:\(path): the change log's newest key is not a sequence number")
            }
            return newest ?? 0
        }
    }

    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry] {
        try LMDBErrors.convert(path: path) {
            guard limit > 0, sequence < UInt64.max, let log = try database(Catalog.logDatabase) else { return [] }
            var entries: [ChangeLogEntry] = []
            var sets = 0
            try scan(log, from: Catalog.bigEndian(sequence + 1)) { key, value in
                guard let number = Catalog.readBigEndian(key), let decoded = Catalog.decodeEntries(value, sequence: number) else {
                    throw ReservoirError(.corrupt, "lmdb:\(path): a change-log record cannot be decoded")
                }
                entries.append(contentsOf: decoded)
                sets += 1
                return sets < limit
            }
            return entries
        }
    }

    // MARK: - WriteTransaction

    func put(_ entity: EntityDescription, id: Value, row: Row) throws {
        if !fitsKey(id) { _ = try idKey(id, entity: entity.name) }
        let index = operationEntity(entity)
        try perform(.put(entity: index, id: id, row: row)) { try applyPut(index, id: id, row: row, onlyNew: false) }
    }

    /// One `mdb_put` with `MDB_NOOVERWRITE`: no separate read for the existing row.
    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        if !fitsKey(id) { _ = try idKey(id, entity: entity.name) }
        let index = operationEntity(entity)
        return try perform(.insert(entity: index, id: id, row: row)) { try applyPut(index, id: id, row: row, onlyNew: true) }
    }

    func delete(_ entity: EntityDescription, id: Value) throws {
        // An id too long for a key was never stored.
        guard fitsKey(id) else { return }
        try perform(.delete(entity: operationEntity(entity), id: id))
    }

    func record(_ changeSet: ChangeSet) throws {
        try perform(.record(changeSet))
    }

    /// The position of `entity` in ``operationEntities``, adding it when it differs from the last.
    private func operationEntity(_ entity: EntityDescription) -> Int {
        let last = operationEntities.count - 1
        // A bulk write passes copies of one description: the same box as the last one's,
        // which ``operationEntities`` keeps alive. Comparing identities copies nothing.
        if last >= 0, entity.identity == lastOperationIdentity { return last }
        if last >= 0, operationEntities.withUnsafeBufferPointer({ $0[last] == entity }) { return last }
        operationEntities.append(entity)
        lastOperationIdentity = entity.identity
        return operationEntities.count - 1
    }

    /// Creates (or checks) the metadata of the store; run by the first write on open.
    func prepareStore() throws {
        try perform(.prepareStore)
    }

    // MARK: - Applying operations

    /// Stores `row` under `id` and updates the entity's indexes. With `onlyNew` (an insert),
    /// returns false, writing nothing at all, when a row has that id.
    private func applyPut(_ entityIndex: Int, id: Value, row: Row, onlyNew: Bool) throws -> Bool {
        let (rows, indexed) = try putTarget(entityIndex)
        return try KeyEncoding.withEncoded(id) { key in
            var old: Row?
            if onlyNew {
                guard try putRow(rows, key, row, onlyNew: true) else { return false }
                // After the row, so that an index this description adds is built including it
                // (writing its entry again below is harmless).
                try ensureEntity(entityIndex)
            } else {
                try ensureEntity(entityIndex)
                if indexed, let bytes = try get(rows, key) {
                    old = try? decodeRow(bytes, entity: operationEntities[entityIndex].name, key: key)
                }
                _ = try putRow(rows, key, row, onlyNew: false)
            }
            guard indexed else { return true }
            let entity = operationEntities[entityIndex]
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

    /// The row database of the entity at `entityIndex` in ``operationEntities`` (created when
    /// missing) and whether it has indexes; kept for the next put, which in a bulk write goes
    /// to the same entity, so that it neither copies the description nor looks its name up.
    @inline(__always)
    private func putTarget(_ entityIndex: Int) throws -> (rows: MDB_dbi, indexed: Bool) {
        if let last = lastPutTarget, last.entity == entityIndex { return (last.rows, last.indexed) }
        let entity = operationEntities[entityIndex]
        guard let rows = try rowsDatabase(entity.name, create: true) else {
            throw ReservoirError(.backend, "lmdb:\(path): the row database of \"\(entity.name)\" could not be created")
        }
        lastPutTarget = (entityIndex, rows, !entity.indexes.isEmpty)
        return (rows, !entity.indexes.isEmpty)
    }

    private func applyDelete(_ entity: EntityDescription, id: Value) throws {
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

    private func applyRecord(_ changeSet: ChangeSet) throws {
        guard let log = try logDatabase(create: true) else { return }
        let sequence = changeSet.sequence
        _ = try withUnsafeBytes(of: sequence.bigEndian) { key in
            try putReserved(log, key, size: Catalog.logRecordSize(changeSet), flags: 0, refused: false, "write a change-log record") {
                Catalog.writeLogRecord(changeSet, to: $0)
            }
        }
        recordedSequence = sequence
        let retention = UInt64(environment.options.logRetention)
        guard retention > 0, sequence > retention else { return }  // 0 keeps all
        // Usually one record falls out per commit: delete from the front with one cursor.
        let cutoff = sequence - retention
        let txn = try liveTransaction()
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, log, &cursor), "open a cursor on the change log")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var data = MDB_val()
        var rc = mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
        while rc == 0 {
            guard let number = Catalog.readBigEndian(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)),
                  number <= cutoff
            else { return }
            try check(mdb_cursor_del(cursor, 0), "delete an old change-log record")
            // After a delete, MDB_NEXT returns the record that followed the deleted one.
            rc = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
        }
        if rc != CLMDB_NOTFOUND { try check(rc, "read the change log") }
    }

    /// Makes the stored description of `entity` match: builds indexes it adds, empties
    /// indexes it drops.
    private func ensureEntity(_ entityIndex: Int) throws {
        if lastEnsured == entityIndex { return }
        let entity = operationEntities[entityIndex]
        let stored = try storedDescription(entity.name)
        guard stored != entity else {
            lastEnsured = entityIndex
            return
        }
        guard let meta = try database(Catalog.metaDatabase, create: true),
              let rows = try rowsDatabase(entity.name, create: true)
        else { return }
        let previous = Set(stored?.indexes ?? [])
        for column in stored?.indexes ?? [] where !entity.indexes.contains(column) {
            if let index = try indexDatabase(entity.name, column) {
                try check(mdb_drop(try liveTransaction(), index, 0), "empty the index on \(entity.name).\(column)")
            }
        }
        for column in entity.indexes where !previous.contains(column) {
            guard let index = try indexDatabase(entity.name, column, create: true) else { continue }
            try check(mdb_drop(try liveTransaction(), index, 0), "empty the index on \(entity.name).\(column)")
            var entries: [[UInt8]] = []
            try scan(rows) { key, value in
                if let row = try? decodeRow(value, entity: entity.name, key: key) {
                    entries.append(withIndexKey(row.value(column), id: key) { Array($0) })
                }
                return true
            }
            for entry in entries { try put(index, entry, []) }
        }
        try put(meta, Catalog.entityKey(entity.name), Catalog.encode(entity))
        written[entity.name] = entity
        lastDescription = (entity.name, entity)
        lastEnsured = entityIndex
    }

    private func applyPrepareStore() throws {
        let txn = try liveTransaction()
        if let meta = try database(Catalog.metaDatabase) {
            if let bytes = try get(meta, Catalog.formatKey) {
                let version = bytes.count == 4 ? bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : 0
                guard Catalog.readableFormats.contains(version) else {
                    throw ReservoirError(.cannotOpen, "lmdb:\(path): the store has format version \(version); this library reads formats \(Catalog.readableFormats.lowerBound) to \(Catalog.formatVersion)")
                }
                _ = try database(Catalog.logDatabase, create: true)
                // Format 1 stores hold only version 1 rows, which this library reads; from now
                // on it writes version 2 rows, which libraries reading format 1 alone cannot.
                if version < Catalog.formatVersion {
                    try put(meta, Catalog.formatKey, withUnsafeBytes(of: Catalog.formatVersion.bigEndian) { Array($0) })
                }
                return
            }
        }
        var stat = MDB_stat()
        try check(mdb_stat(txn, CLMDB_MAIN_DBI, &stat), "list the named databases")
        let ours = (try database(Catalog.metaDatabase) != nil ? 1 : 0) + (try database(Catalog.logDatabase) != nil ? 1 : 0)
        guard stat.ms_entries <= ours else {
            throw ReservoirError(.cannotOpen, "lmdb:\(path): is an LMDB environment, but not a Reservoir store (it holds \(stat.ms_entries) records or databases of something else)")
        }
        guard let meta = try database(Catalog.metaDatabase, create: true) else { return }
        _ = try database(Catalog.logDatabase, create: true)
        try put(meta, Catalog.formatKey, withUnsafeBytes(of: Catalog.formatVersion.bigEndian) { Array($0) })
    }
}
