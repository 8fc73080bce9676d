import BenchSupport
import CLMDB
import CLibPQ
import CSQLiteRaw
import Foundation

// The raw C side of the catch-up: each engine's minimal log of the same (sequence, id) pairs,
// one row per entry in entry order, read from the first entry on as a careful C program would
// (one SQLite statement stepped to the end, one LMDB cursor, libpq pages of 10,000 rows with
// binary results); and what the library's own change log occupies on disk.

// MARK: - SQLite

final class RawSQLite {
    private var db: OpaquePointer?

    init<S: Sequence>(path: String, pairs: S) throws where S.Element == (sequence: UInt64, id: Int) {
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchError("raw sqlite: cannot open \(path)") }
        try Self.exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; CREATE TABLE log(entry INTEGER PRIMARY KEY, sequence INTEGER NOT NULL, id INTEGER NOT NULL); BEGIN")
        var insert: OpaquePointer?
        guard sqlite3_prepare_v2(db, "INSERT INTO log(sequence, id) VALUES (?1, ?2)", -1, &insert, nil) == SQLITE_OK else { throw BenchError("raw sqlite: prepare") }
        defer { sqlite3_finalize(insert) }
        for pair in pairs {
            sqlite3_bind_int64(insert, 1, Int64(pair.sequence))
            sqlite3_bind_int64(insert, 2, Int64(pair.id))
            guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchError("raw sqlite: insert") }
            sqlite3_reset(insert)
        }
        try Self.exec(db, "COMMIT; PRAGMA wal_checkpoint(TRUNCATE)")
    }

    deinit { sqlite3_close_v2(db) }

    static func exec(_ db: OpaquePointer, _ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("raw sqlite: \(String(cString: sqlite3_errmsg(db)))") }
    }

    /// Every pair after entry 0, in order: the sum of the ids.
    func read() throws -> Int {
        var select: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT sequence, id FROM log WHERE entry > ?1 ORDER BY entry", -1, &select, nil) == SQLITE_OK else {
            throw BenchError("raw sqlite: prepare")
        }
        defer { sqlite3_finalize(select) }
        sqlite3_bind_int64(select, 1, 0)
        var checksum = 0
        var last: Int64 = 0
        while sqlite3_step(select) == SQLITE_ROW {
            last = sqlite3_column_int64(select, 0)
            checksum &+= Int(sqlite3_column_int64(select, 1))
        }
        guard last > 0 else { throw BenchError("raw sqlite: read nothing") }
        return checksum
    }

    /// The pages of the store's change-log table (SQLite's dbstat), in bytes.
    static func logBytes(path: String) throws -> Int {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else { throw BenchError("raw sqlite: cannot open \(path)") }
        defer { sqlite3_close_v2(db) }
        var select: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT sum(pgsize) FROM dbstat WHERE name = '_reservoir_changes'", -1, &select, nil) == SQLITE_OK else {
            throw BenchError("raw sqlite: dbstat: \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(select) }
        guard sqlite3_step(select) == SQLITE_ROW else { throw BenchError("raw sqlite: dbstat returned nothing") }
        return Int(sqlite3_column_int64(select, 0))
    }
}

// MARK: - LMDB

final class RawLMDB {
    private let env: OpaquePointer
    private let dbi: MDB_dbi

    static func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw BenchError("raw lmdb: \(what): \(String(cString: mdb_strerror(rc)))") }
    }

    static func openEnvironment(_ path: String, flags: UInt32) throws -> OpaquePointer {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "create")
        guard let env else { throw BenchError("raw lmdb: no environment") }
        do {
            try check(mdb_env_set_mapsize(env, 4 << 30), "mapsize")
            try check(mdb_env_set_maxdbs(env, 64), "maxdbs")
            try check(mdb_env_open(env, path, flags, 0o644), "open \(path)")
        } catch {
            mdb_env_close(env)
            throw error
        }
        return env
    }

    init<S: Sequence>(path: String, pairs: S) throws where S.Element == (sequence: UInt64, id: Int) {
        env = try Self.openEnvironment(path, flags: CLMDB_NOSYNC)
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn), "begin")
        var dbi = MDB_dbi()
        try Self.check(mdb_dbi_open(txn, nil, 0, &dbi), "dbi")
        self.dbi = dbi
        var entry: UInt64 = 0
        for pair in pairs {
            entry += 1
            var key = entry.bigEndian
            var value = (pair.sequence, UInt64(pair.id))
            try withUnsafeMutableBytes(of: &key) { keyBytes in
                try withUnsafeMutableBytes(of: &value) { valueBytes in
                    var k = MDB_val(mv_size: keyBytes.count, mv_data: keyBytes.baseAddress)
                    var v = MDB_val(mv_size: valueBytes.count, mv_data: valueBytes.baseAddress)
                    try Self.check(mdb_put(txn, dbi, &k, &v, CLMDB_APPEND), "put")
                }
            }
        }
        try Self.check(mdb_txn_commit(txn), "commit")
    }

    deinit { mdb_env_close(env) }

    /// Every pair after entry 0, in order, with one cursor: the sum of the ids.
    func read() throws -> Int {
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        try Self.check(mdb_cursor_open(txn, dbi, &cursor), "cursor")
        defer { mdb_cursor_close(cursor) }
        var first = UInt64(1).bigEndian
        var checksum = 0
        var last: UInt64 = 0
        try withUnsafeMutableBytes(of: &first) { firstBytes in
            var key = MDB_val(mv_size: firstBytes.count, mv_data: firstBytes.baseAddress)
            var value = MDB_val()
            var rc = mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
            while rc == 0 {
                let bytes = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
                last = bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
                checksum &+= Int(bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
            }
            guard rc == CLMDB_NOTFOUND else { throw BenchError("raw lmdb: cursor: \(String(cString: mdb_strerror(rc)))") }
        }
        guard last > 0 else { throw BenchError("raw lmdb: read nothing") }
        return checksum
    }

    /// The pages of the store's change-log database (`log`), in bytes (mdb_stat).
    static func logBytes(path: String) throws -> Int {
        let env = try openEnvironment(path, flags: CLMDB_RDONLY)
        defer { mdb_env_close(env) }
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
        defer { mdb_txn_abort(txn) }
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, "log", 0, &dbi), "open the log database")
        var stat = MDB_stat()
        try check(mdb_stat(txn, dbi, &stat), "stat")
        return Int(stat.ms_psize) * (stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages)
    }
}

// MARK: - PostgreSQL

final class RawPostgres {
    private let connection: OpaquePointer
    private let table: String

    static func run(_ connection: OpaquePointer, _ sql: String) throws -> OpaquePointer {
        guard let result = PQexec(connection, sql) else { throw BenchError("raw libpq: out of memory") }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = String(cString: PQresultErrorMessage(result))
            PQclear(result)
            throw BenchError("raw libpq: \(sql.prefix(80)): \(message)")
        }
        return result
    }

    /// The pairs are made by the server (entry `e` is change set `e / shape`, record `e % records`).
    init(url: String, schema: String, pairs: Int, shape: Int, records: Int, firstSequence: UInt64) throws {
        connection = try RawLibPQ.connect(url)
        table = "\"\(schema)\".raw_log"
        PQclear(try Self.run(connection, """
            CREATE TABLE \(table) (entry bigint PRIMARY KEY, sequence bigint NOT NULL, id bigint NOT NULL);
            INSERT INTO \(table) SELECT e, \(firstSequence) + e / \(shape), e % \(records) FROM generate_series(0, \(pairs - 1)) AS e
            """))
        // VACUUM runs alone (not in a multi-statement string's implicit transaction).
        PQclear(try Self.run(connection, "VACUUM ANALYZE \(table)"))
    }

    deinit { PQfinish(connection) }

    /// Every pair in order, in pages of 10,000 rows after the last entry read, binary results.
    func read() throws -> Int {
        let sql = "SELECT entry, sequence, id FROM \(table) WHERE entry > $1::bigint ORDER BY entry LIMIT 10000"
        var checksum = 0
        var after: Int64 = -1
        while true {
            var parameter = UInt64(bitPattern: after).bigEndian
            let result = try withUnsafeBytes(of: &parameter) { bytes -> OpaquePointer in
                var values: [UnsafePointer<CChar>?] = [bytes.baseAddress?.assumingMemoryBound(to: CChar.self)]
                var lengths: [Int32] = [8]
                var formats: [Int32] = [1]
                guard let result = PQexecParams(connection, sql, 1, nil, &values, &lengths, &formats, 1) else { throw BenchError("raw libpq: out of memory") }
                guard PQresultStatus(result) == PGRES_TUPLES_OK else {
                    let message = String(cString: PQresultErrorMessage(result))
                    PQclear(result)
                    throw BenchError("raw libpq: read: \(message)")
                }
                return result
            }
            defer { PQclear(result) }
            let rows = PQntuples(result)
            if rows == 0 { break }
            func int64(_ row: Int32, _ column: Int32) -> Int64 {
                var value: UInt64 = 0
                memcpy(&value, PQgetvalue(result, row, column), 8)
                return Int64(bitPattern: UInt64(bigEndian: value))
            }
            for row in 0..<rows { checksum &+= Int(int64(row, 2)) }
            after = int64(rows - 1, 0)
        }
        return checksum
    }

    /// The store's change-log table with its indexes and TOAST, in bytes.
    static func logBytes(schema: String, url: String) throws -> Int {
        let connection = try RawLibPQ.connect(url)
        defer { PQfinish(connection) }
        PQclear(try run(connection, "VACUUM \"\(schema)\"._reservoir_changes"))
        let result = try run(connection, "SELECT pg_total_relation_size('\"\(schema)\"._reservoir_changes')")
        defer { PQclear(result) }
        return Int(String(cString: PQgetvalue(result, 0, 0))) ?? 0
    }

    static func drop(schema: String, url: String) {
        guard let connection = try? RawLibPQ.connect(url) else { return }
        PQclear(PQexec(connection, "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"))
        PQfinish(connection)
    }
}
