import CLMDB
import Foundation
import Reservoir

/// A live `MDB_txn`: every `mdb_*` call made on a transaction goes through here, and every
/// result code other than success (and "not found", where that is an answer) becomes an
/// ``LMDBFailure``, which callers turn into a ``ReservoirError`` naming the store with
/// ``LMDBErrors/convert(path:_:)``.
///
/// A value, not a class, so that wrapping costs nothing on the hot paths; its lifetime is
/// its owner's: ``LMDBTransaction`` (or a short internal read of ``LMDBEnvironment``)
/// begins it with ``LMDBEnvironment/beginTransaction(readOnly:_:)`` and ends it with
/// ``commit()`` or ``abort()`` exactly once.
struct MDBTxn {
    let raw: OpaquePointer

    /// LMDB's id of this transaction: for a write, the id its commit will have; for a
    /// read, the id of the commit it sees.
    var id: Int { mdb_txn_id(raw) }

    /// Commits; LMDB frees the transaction whatever the outcome. Returns the result code,
    /// because a full map (`MDB_MAP_FULL`) is not a failure to the caller but a cue to grow.
    func commit() -> Int32 { mdb_txn_commit(raw) }

    func abort() { mdb_txn_abort(raw) }

    // MARK: - Named databases

    /// The handle of a named database, or nil when it does not exist and `create` is false.
    func openDatabase(_ name: String, create: Bool) throws -> MDB_dbi? {
        var dbi = MDB_dbi()
        let rc = mdb_dbi_open(raw, name, create ? CLMDB_CREATE : 0, &dbi)
        if rc == CLMDB_NOTFOUND { return nil }
        try check(rc, "open the named database \"\(name)\"")
        return dbi
    }

    /// The statistics of a database (`CLMDB_MAIN_DBI`: the list of named databases).
    func stat(_ dbi: MDB_dbi, _ operation: @autoclosure () -> String) throws -> MDB_stat {
        var stat = MDB_stat()
        try check(mdb_stat(raw, dbi, &stat), operation())
        return stat
    }

    /// Empties a database, keeping its handle.
    func empty(_ dbi: MDB_dbi, _ operation: @autoclosure () -> String) throws {
        try check(mdb_drop(raw, dbi, 0), operation())
    }

    /// Deletes a named database from the environment; LMDB closes its handle in the whole
    /// process at once, committed or not (see ``LMDBEnvironment/deleteDatabases(_:in:)``).
    func delete(database dbi: MDB_dbi, _ operation: @autoclosure () -> String) throws {
        try check(mdb_drop(raw, dbi, 1), operation())
    }

    // MARK: - Records

    /// The value stored under `key`, valid until the transaction changes or ends.
    @inline(__always)
    func get(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var data = MDB_val()
        var k = clmdb_val(key.baseAddress, key.count)
        let rc = mdb_get(raw, dbi, &k, &data)
        if rc == CLMDB_NOTFOUND { return nil }
        try check(rc, "read a record")
        return UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
    }

    @inline(__always)
    func put(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer,
             _ operation: @autoclosure () -> String) throws {
        var mk = clmdb_val(key.baseAddress, key.count)
        var mv = clmdb_val(value.baseAddress, value.count)
        try check(mdb_put(raw, dbi, &mk, &mv, 0), operation())
    }

    /// Reserves `size` bytes under `key` (`MDB_RESERVE`) for the caller to write into.
    /// `flags` adds `MDB_NOOVERWRITE` or `MDB_APPEND`; with `refused`, LMDB refusing the
    /// key (`MDB_KEYEXIST`) reserves nothing and returns nil instead of throwing.
    @inline(__always)
    func reserve(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, size: Int, flags: UInt32, refused: Bool,
                 _ operation: @autoclosure () -> String) throws -> MDB_val? {
        var mk = clmdb_val(key.baseAddress, key.count)
        var mv = clmdb_val(nil, size)
        let rc = mdb_put(raw, dbi, &mk, &mv, UInt32(MDB_RESERVE) | flags)
        if refused && rc == MDB_KEYEXIST { return nil }
        try check(rc, operation())
        return mv
    }

    /// Deletes the record under `key`; a missing one is not an error.
    func delete(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws {
        var mk = clmdb_val(key.baseAddress, key.count)
        let rc = mdb_del(raw, dbi, &mk, nil)
        if rc == CLMDB_NOTFOUND { return }
        try check(rc, "delete a record")
    }

    /// Runs `body` with a cursor on `dbi`, closed when it returns.
    @inline(__always)
    func withCursor<R>(_ dbi: MDB_dbi, _ operation: @autoclosure () -> String, _ body: (inout MDBCursor) throws -> R) throws -> R {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(raw, dbi, &cursor), operation())
        guard let cursor else { throw LMDBFailure(code: EINVAL, operation: operation()) }
        defer { mdb_cursor_close(cursor) }
        var wrapped = MDBCursor(raw: cursor)
        return try body(&wrapped)
    }
}

/// A cursor of an ``MDBTxn``, open for the duration of ``MDBTxn/withCursor(_:_:_:)``.
/// Each move returns the record it lands on, or nil past either end (or when the key
/// sought is absent); other result codes throw ``LMDBFailure``.
struct MDBCursor {
    typealias Record = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    let raw: OpaquePointer
    private var key = MDB_val()
    private var data = MDB_val()

    init(raw: OpaquePointer) { self.raw = raw }

    @inline(__always)
    private mutating func move(_ op: MDB_cursor_op, _ operation: @autoclosure () -> String) throws -> Record? {
        let rc = mdb_cursor_get(raw, &key, &data, op)
        if rc == CLMDB_NOTFOUND { return nil }
        try check(rc, operation())
        return (UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
    }

    mutating func first() throws -> Record? { try move(MDB_FIRST, "read with a cursor") }
    mutating func last() throws -> Record? { try move(MDB_LAST, "read with a cursor") }
    @inline(__always) mutating func next() throws -> Record? { try move(MDB_NEXT, "read with a cursor") }
    @inline(__always) mutating func previous() throws -> Record? { try move(MDB_PREV, "read with a cursor") }

    /// The first record whose key is at or after `start`.
    mutating func seek(atOrAfter start: UnsafeRawBufferPointer) throws -> Record? {
        key = clmdb_val(start.baseAddress, start.count)
        return try move(MDB_SET_RANGE, "read with a cursor")
    }

    /// The record whose key is exactly `wanted`.
    @inline(__always)
    mutating func seek(exactly wanted: UnsafeRawBufferPointer) throws -> Record? {
        key = clmdb_val(wanted.baseAddress, wanted.count)
        return try move(MDB_SET_KEY, "read a record")
    }

    /// Deletes the record the cursor is on; the next ``next()`` returns the one after it.
    mutating func deleteCurrent(_ operation: @autoclosure () -> String) throws {
        try check(mdb_cursor_del(raw, 0), operation())
    }
}
