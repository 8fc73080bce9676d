import BenchSupport
import CLMDB
import Foundation

/// The migration written by hand against LMDB's C API, as a careful C program would store the
/// records: database `notes` keyed by the id (8 bytes, big-endian), the value a positional layout
/// (the priority's kind byte, its 8-byte integer or 2-byte length and text, then the title's
/// UTF-8), and the schema version in database `meta`. A positional layout names no field, so the
/// rename costs nothing; the type change rewrites every value, read through one cursor and put
/// back by key, and the index is a database `notes_name` keyed by name and id, all in one
/// write transaction, with `MDB_NOMETASYNC` (Reservoir's `durability=normal`).
enum RawLMDB {
    static func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw BenchError("raw lmdb: \(what): \(String(cString: mdb_strerror(rc)))") }
    }

    static func open(_ place: Place) throws -> OpaquePointer {
        let path = place.directory + "/raw-lmdb"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "create")
        guard let env else { throw BenchError("raw lmdb: no environment") }
        do {
            try check(mdb_env_set_mapsize(env, 4 << 30), "mapsize")
            try check(mdb_env_set_maxdbs(env, 8), "maxdbs")
            try check(mdb_env_open(env, path, CLMDB_NOMETASYNC | CLMDB_NOTLS, 0o644), "open \(path)")
        } catch {
            mdb_env_close(env)
            throw error
        }
        return env
    }

    static func database(_ txn: OpaquePointer?, _ name: String, create: Bool = true) throws -> MDB_dbi {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, name, create ? CLMDB_CREATE : 0, &dbi), "open database \(name)")
        return dbi
    }

    static func put(_ txn: OpaquePointer?, _ dbi: MDB_dbi, key: [UInt8], value: [UInt8], flags: UInt32 = 0) throws {
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in
                var mk = clmdb_val(k.baseAddress, k.count)
                var mv = clmdb_val(v.baseAddress, v.count)
                try check(mdb_put(txn, dbi, &mk, &mv, flags), "put")
            }
        }
    }

    static func idKey(_ id: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(id).bigEndian) { Array($0) } }

    static func encode(priority: Int, title: String, into value: inout [UInt8]) {
        value.removeAll(keepingCapacity: true)
        value.append(0)
        withUnsafeBytes(of: Int64(priority).littleEndian) { value.append(contentsOf: $0) }
        value.append(contentsOf: title.utf8)
    }

    /// Runs `body` in one write transaction of the environment at `place`: committed when it
    /// returns, aborted when it throws.
    static func writing(_ place: Place, _ body: (OpaquePointer?) throws -> Void) throws {
        let env = try open(place)
        defer { mdb_env_close(env) }
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "begin")
        do {
            try body(txn)
            try check(mdb_txn_commit(txn), "commit")
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
    }

    static func seed(_ place: Place, records: Int) throws {
        try writing(place) { txn in
            let notes = try database(txn, "notes")
            var value: [UInt8] = []
            for id in 0..<records {
                encode(priority: Note.priority(id), title: Note.title(id), into: &value)
                try put(txn, notes, key: idKey(id), value: value, flags: CLMDB_APPEND)
            }
            try put(txn, try database(txn, "meta"), key: Array("version".utf8), value: [1])
        }
    }

    static func migrate(_ place: Place) throws {
        try writing(place) { txn in
            let notes = try database(txn, "notes")
            let index = try database(txn, "notes_name")
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(txn, notes, &cursor), "cursor")
            defer { mdb_cursor_close(cursor) }
            var key = MDB_val()
            var data = MDB_val()
            var value: [UInt8] = []
            var indexKey: [UInt8] = []
            var rc = mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
            while rc == 0 {
                let old = UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
                guard old.count >= 9, old[0] == 0 else { throw BenchError("raw lmdb: a value not at version 1") }
                let priority = Int(Int64(littleEndian: old.loadUnaligned(fromByteOffset: 1, as: Int64.self)))
                let title = UnsafeRawBufferPointer(rebasing: old[9...])
                let text = Array(String(priority).utf8)
                value.removeAll(keepingCapacity: true)
                value.append(1)
                withUnsafeBytes(of: UInt16(text.count).littleEndian) { value.append(contentsOf: $0) }
                value.append(contentsOf: text)
                value.append(contentsOf: title)
                indexKey.removeAll(keepingCapacity: true)
                indexKey.append(contentsOf: title)
                indexKey.append(contentsOf: UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size))
                let id = Array(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size))
                try put(txn, index, key: indexKey, value: [])
                // A value that grows can split its page, so the row is put by key and the cursor
                // set on it again before stepping on (MDB_CURRENT in place of this skipped rows).
                try put(txn, notes, key: id, value: value)
                rc = id.withUnsafeBytes { bytes in
                    key = clmdb_val(bytes.baseAddress, bytes.count)
                    let found = mdb_cursor_get(cursor, &key, &data, MDB_SET)
                    return found == 0 ? mdb_cursor_get(cursor, &key, &data, MDB_NEXT) : found
                }
            }
            if rc != CLMDB_NOTFOUND { try check(rc, "cursor") }
            try put(txn, try database(txn, "meta"), key: Array("version".utf8), value: [2])
        }
    }

    static func verify(_ place: Place, records: Int) throws {
        let env = try open(place)
        defer { mdb_env_close(env) }
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
        defer { mdb_txn_abort(txn) }
        var stat = MDB_stat()
        try check(mdb_stat(txn, try database(txn, "notes_name", create: false), &stat), "stat")
        guard stat.ms_entries == records else { throw BenchError("raw lmdb: \(stat.ms_entries) index entries, expected \(records)") }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, try database(txn, "notes", create: false), &cursor), "cursor")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var data = MDB_val()
        var count = 0
        var rc = mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
        while rc == 0 {
            let id = Int(UInt64(bigEndian: UnsafeRawBufferPointer(start: key.mv_data, count: 8).loadUnaligned(as: UInt64.self)))
            let bytes = UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
            let length = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 1, as: UInt16.self)))
            guard bytes[0] == 1,
                  String(decoding: UnsafeRawBufferPointer(rebasing: bytes[3..<(3 + length)]), as: UTF8.self) == Note.migratedPriority(id),
                  String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(3 + length)...]), as: UTF8.self) == Note.title(id)
            else { throw BenchError("raw lmdb: record \(id) is not migrated") }
            count += 1
            rc = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
        }
        guard count == records else { throw BenchError("raw lmdb: \(count) records, expected \(records)") }
    }

    static let side = Side(name: "raw-lmdb", engine: "lmdb", label: "hand-written, LMDB C API",
                           seed: { try seed($0, records: $1) }, migrate: { try migrate($0) }, verify: { try verify($0, records: $1) })
}
