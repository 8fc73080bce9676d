import CLMDB
import Foundation
import Reservoir

// MARK: - Raw LMDB

struct RawItem {
    var id: Int
    var name: String
    var score: Double
    var rank: Int
}

enum Raw {
    static func check(_ rc: Int32, _ what: String) {
        if rc != 0 { fatalError("\(what): \(String(cString: mdb_strerror(rc)))") }
    }

    static func key(_ id: Int) -> UInt64 { UInt64(id).bigEndian }

    static func encode(_ item: Item, into buffer: inout [UInt8]) {
        buffer.removeAll(keepingCapacity: true)
        withUnsafeBytes(of: item.score.bitPattern) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: Int64(item.rank)) { buffer.append(contentsOf: $0) }
        var name = item.name
        name.withUTF8 { buffer.append(contentsOf: $0) }
    }

    static func decode(id: Int, _ data: UnsafeRawBufferPointer) -> RawItem {
        let score = Double(bitPattern: data.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        let rank = Int(data.loadUnaligned(fromByteOffset: 8, as: Int64.self))
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: data[16...]), as: UTF8.self)
        return RawItem(id: id, name: name, score: score, rank: rank)
    }

    static func open(_ path: String, named name: String? = nil) -> (OpaquePointer, MDB_dbi) {
        var env: OpaquePointer?
        check(mdb_env_create(&env), "create")
        check(mdb_env_set_mapsize(env, 1 << 30), "mapsize")
        check(mdb_env_set_maxdbs(env, 4), "maxdbs")
        check(mdb_env_open(env, path, CLMDB_NOSYNC | CLMDB_NOTLS, 0o644), "open")
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "begin")
        var dbi = MDB_dbi()
        check(mdb_dbi_open(txn, name, name == nil ? 0 : CLMDB_CREATE, &dbi), "dbi")
        check(mdb_txn_commit(txn), "commit")
        return (env!, dbi)
    }

    static func put(_ txn: OpaquePointer?, _ dbi: MDB_dbi, _ item: Item, _ buffer: inout [UInt8], flags: UInt32 = 0) {
        encode(item, into: &buffer)
        var k = key(item.id)
        withUnsafeMutableBytes(of: &k) { kb in
            buffer.withUnsafeMutableBytes { vb in
                var mk = clmdb_val(kb.baseAddress, kb.count)
                var mv = clmdb_val(vb.baseAddress, vb.count)
                check(mdb_put(txn, dbi, &mk, &mv, flags), "put")
            }
        }
    }

    /// The bulk insert with `MDB_APPEND` (the items' keys ascend), which the backend uses
    /// for keys above the last one: shown beside the plain baseline, not instead of it.
    static func runAppendBulk() -> Double {
        let path = temporaryDirectory("raw-append")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (env, dbi) = open(path)
        defer { mdb_env_close(env) }
        var buffer: [UInt8] = []
        return seconds { bulkInsert(env, dbi, &buffer, flags: CLMDB_APPEND) }
    }

    /// Every item in one write transaction.
    static func bulkInsert(_ env: OpaquePointer, _ dbi: MDB_dbi, _ buffer: inout [UInt8], flags: UInt32 = 0) {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "begin")
        for item in items { put(txn, dbi, item, &buffer, flags: flags) }
        check(mdb_txn_commit(txn), "commit")
    }

    /// Every item, decoded by a cursor scan, then sorted by score (and id).
    static func fetchAll(_ env: OpaquePointer, _ dbi: MDB_dbi) -> [RawItem] {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
        var cursor: OpaquePointer?
        check(mdb_cursor_open(txn, dbi, &cursor), "cursor")
        var k = MDB_val(), v = MDB_val()
        var all: [RawItem] = []
        all.reserveCapacity(count)
        var op = MDB_FIRST
        while mdb_cursor_get(cursor, &k, &v, op) == 0 {
            op = MDB_NEXT
            let id = Int(UInt64(bigEndian: UnsafeRawBufferPointer(start: k.mv_data, count: 8).loadUnaligned(as: UInt64.self)))
            all.append(decode(id: id, UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)))
        }
        mdb_cursor_close(cursor)
        mdb_txn_abort(txn)
        all.sort { $0.score != $1.score ? $0.score < $1.score : $0.id < $1.id }
        return all
    }

    static func run() -> [String: Double] {
        let path = temporaryDirectory("raw")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (env, dbi) = open(path)
        defer { mdb_env_close(env) }
        var results: [String: Double] = [:]
        var buffer: [UInt8] = []
        results["bulk"] = seconds { bulkInsert(env, dbi, &buffer) }
        var sorted: [RawItem] = []
        results["fetchAll"] = seconds { sorted = fetchAll(env, dbi) }
        precondition(sorted.count == count)
        var checksum = 0
        results["point"] = seconds {
            var txn: OpaquePointer?
            check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin")
            for id in lookups {
                var k = key(id)
                var v = MDB_val()
                withUnsafeMutableBytes(of: &k) { kb in
                    var mk = clmdb_val(kb.baseAddress, kb.count)
                    check(mdb_get(txn, dbi, &mk, &v), "get")
                }
                checksum &+= decode(id: id, UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)).rank
            }
            mdb_txn_abort(txn)
        }
        precondition(checksum > 0)
        results["commits"] = seconds {
            for i in 0..<commits {
                var txn: OpaquePointer?
                check(mdb_txn_begin(env, nil, 0, &txn), "begin")
                put(txn, dbi, Item(id: count + i, name: "single \(i)", score: 1, rank: 1), &buffer)
                check(mdb_txn_commit(txn), "commit")
            }
        }
        return results
    }

    /// Single-record commits into a named database beside a second one (a log), the shape
    /// of the backend's commits: shows what the layout itself costs.
    static func runNamedCommits() -> Double {
        let path = temporaryDirectory("raw-named")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (env, dbi) = open(path, named: "rows")
        defer { mdb_env_close(env) }
        var logDBI = MDB_dbi()
        var setup: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &setup), "begin")
        check(mdb_dbi_open(setup, "log", CLMDB_CREATE, &logDBI), "dbi")
        check(mdb_txn_commit(setup), "commit")
        var buffer: [UInt8] = []
        return seconds {
            for i in 0..<commits {
                var txn: OpaquePointer?
                check(mdb_txn_begin(env, nil, 0, &txn), "begin")
                put(txn, dbi, Item(id: count + i, name: "single \(i)", score: 1, rank: 1), &buffer)
                put(txn, logDBI, Item(id: i, name: "log", score: 0, rank: 0), &buffer)
                check(mdb_txn_commit(txn), "commit")
            }
        }
    }
}
