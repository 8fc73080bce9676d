import BenchSupport
import CLMDB
import Foundation

/// The raw LMDB C API: records under big-endian ids in one database, a second database
/// indexing them by group (group and id as the key), MDB_NOSYNC. Values are the fixed
/// fields then the name's bytes, decoded into Swift values as every other side decodes.
final class RawLMDBSide: BenchSide {
    let column = TableColumn.rawLMDB
    /// Group reads keep each group's records in an array (``GroupSink``).
    var collectsGroups = false
    private var env: OpaquePointer?
    private var records = MDB_dbi()
    private var groups = MDB_dbi()
    private var directory: URL?
    private var buffer: [UInt8] = []

    private func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw BenchError("raw LMDB: \(what): \(String(cString: mdb_strerror(rc)))") }
    }

    func reset() throws {
        close()
        let directory = try scratchDirectory("raw-lmdb")
        self.directory = directory
        try check(mdb_env_create(&env), "create")
        try check(mdb_env_set_mapsize(env, 4 << 30), "mapsize")
        try check(mdb_env_set_maxdbs(env, 4), "maxdbs")
        try check(mdb_env_open(env, directory.path, CLMDB_NOSYNC | CLMDB_NOTLS, 0o644), "open")
        try write { txn in
            try check(mdb_dbi_open(txn, "items", CLMDB_CREATE, &records), "open items")
            try check(mdb_dbi_open(txn, "items_group", CLMDB_CREATE, &groups), "open items_group")
        }
    }

    private func write(_ body: (OpaquePointer?) throws -> Void) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "begin")
        do {
            try body(txn)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(mdb_txn_commit(txn), "commit")
    }

    private func put(_ txn: OpaquePointer?, _ dbi: MDB_dbi, key: [UInt64], value: [UInt8]) throws {
        var key = key.map(\.bigEndian)
        var value = value
        try key.withUnsafeMutableBytes { keyBytes in
            try value.withUnsafeMutableBytes { valueBytes in
                var k = clmdb_val(keyBytes.baseAddress, keyBytes.count)
                var v = clmdb_val(valueBytes.baseAddress, valueBytes.count)
                try check(mdb_put(txn, dbi, &k, &v, 0), "put")
            }
        }
    }

    private func delete(_ txn: OpaquePointer?, _ dbi: MDB_dbi, key: [UInt64]) throws {
        var key = key.map(\.bigEndian)
        try key.withUnsafeMutableBytes { keyBytes in
            var k = clmdb_val(keyBytes.baseAddress, keyBytes.count)
            let rc = mdb_del(txn, dbi, &k, nil)
            if rc != CLMDB_NOTFOUND { try check(rc, "del") }
        }
    }

    private func encode(_ record: BenchRecord) -> [UInt8] {
        buffer.removeAll(keepingCapacity: true)
        withUnsafeBytes(of: record.score.bitPattern) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: Int64(record.rank)) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: Int64(record.group)) { buffer.append(contentsOf: $0) }
        var name = record.name
        name.withUTF8 { buffer.append(contentsOf: $0) }
        return buffer
    }

    private static func decode(id: Int, _ data: UnsafeRawBufferPointer) -> BenchRecord {
        BenchRecord(id: id, name: String(decoding: UnsafeRawBufferPointer(rebasing: data[24...]), as: UTF8.self),
                    score: Double(bitPattern: data.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                    rank: Int(data.loadUnaligned(fromByteOffset: 8, as: Int64.self)),
                    group: Int(data.loadUnaligned(fromByteOffset: 16, as: Int64.self)))
    }

    func insert(_ records: ArraySlice<BenchRecord>) throws {
        try write { txn in
            for record in records {
                try put(txn, self.records, key: [UInt64(record.id)], value: encode(record))
                try put(txn, groups, key: [UInt64(record.group), UInt64(record.id)], value: [])
            }
        }
    }

    func fetchSorted() throws -> [Int] {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, records, &cursor), "cursor")
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val(), v = MDB_val()
        var all: [BenchRecord] = []
        var op = MDB_FIRST
        while mdb_cursor_get(cursor, &k, &v, op) == 0 {
            op = MDB_NEXT
            let id = Int(UInt64(bigEndian: UnsafeRawBufferPointer(start: k.mv_data, count: 8).loadUnaligned(as: UInt64.self)))
            all.append(Self.decode(id: id, UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)))
        }
        all.sort { $0.rank != $1.rank ? $0.rank < $1.rank : $0.name < $1.name }
        return all.map(\.id)
    }

    /// Each read in a read transaction of its own (reset and renewed, LMDB's cheap way), as
    /// the other sides read one record per call.
    func pointReads(_ ids: [Int]) throws -> Int {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
        defer { mdb_txn_abort(txn) }
        mdb_txn_reset(txn)
        var checksum = 0
        for id in ids {
            try check(mdb_txn_renew(txn), "renew")
            var key = UInt64(id).bigEndian
            var v = MDB_val()
            let rc = withUnsafeMutableBytes(of: &key) { keyBytes in
                var k = clmdb_val(keyBytes.baseAddress, keyBytes.count)
                return mdb_get(txn, records, &k, &v)
            }
            if rc == 0 { checksum &+= Self.decode(id: id, UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)).rank }
            mdb_txn_reset(txn)
        }
        return checksum
    }

    /// Each group's records through the group index: a cursor from (group, 0) while the key's
    /// group matches, each record then read by id, in one read transaction (reset and renewed).
    func groupReads(_ groups: [Int]) throws -> Int {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
        defer { mdb_txn_abort(txn) }
        mdb_txn_reset(txn)
        var sink = GroupSink(collects: collectsGroups)
        for group in groups {
            try check(mdb_txn_renew(txn), "renew")
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(txn, self.groups, &cursor), "cursor")
            var start = [UInt64(group).bigEndian, UInt64(0)]
            var k = MDB_val(), v = MDB_val()
            var rc = start.withUnsafeMutableBytes { bytes in
                k = clmdb_val(bytes.baseAddress, bytes.count)
                return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
            }
            while rc == 0 {
                let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
                guard Int(UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))) == group else { break }
                var id = key.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                var record = MDB_val()
                let found = withUnsafeMutableBytes(of: &id) { idBytes in
                    var rk = clmdb_val(idBytes.baseAddress, idBytes.count)
                    return mdb_get(txn, records, &rk, &record)
                }
                try check(found, "get")
                sink.take(Self.decode(id: Int(UInt64(bigEndian: id)), UnsafeRawBufferPointer(start: record.mv_data, count: record.mv_size)))
                rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
            }
            mdb_cursor_close(cursor)
            if rc != 0 && rc != CLMDB_NOTFOUND { try check(rc, "cursor next") }
            mdb_txn_reset(txn)
            sink.endGroup()
        }
        return sink.checksum
    }

    /// Replaces a stored record: its old group read first, so the index entry that goes is
    /// the one that was there (a real update must not assume the group unchanged).
    private func update(_ txn: OpaquePointer?, _ record: BenchRecord) throws {
        var key = UInt64(record.id).bigEndian
        var old = MDB_val()
        let rc = withUnsafeMutableBytes(of: &key) { keyBytes in
            var k = clmdb_val(keyBytes.baseAddress, keyBytes.count)
            return mdb_get(txn, records, &k, &old)
        }
        try check(rc, "get")
        let oldGroup = UInt64(UnsafeRawBufferPointer(start: old.mv_data, count: old.mv_size).loadUnaligned(fromByteOffset: 16, as: Int64.self))
        try delete(txn, groups, key: [oldGroup, UInt64(record.id)])
        try put(txn, self.records, key: [UInt64(record.id)], value: encode(record))
        try put(txn, groups, key: [UInt64(record.group), UInt64(record.id)], value: [])
    }

    func commitEach(_ records: [BenchRecord]) throws {
        for record in records {
            try write { txn in try update(txn, record) }
        }
    }

    func updateAll(_ records: [BenchRecord]) throws {
        try write { txn in
            for record in records { try update(txn, record) }
        }
    }

    func close() {
        if let env { mdb_env_close(env) }
        env = nil
        if let directory { try? FileManager.default.removeItem(at: directory) }
        directory = nil
    }

    deinit { close() }
}
