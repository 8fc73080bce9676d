import CLMDB
import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// Bad locations and options: a thrown error naming the path and the cause, never a crash,
/// and nothing already stored is touched.
@Suite struct BadInputTests {
    func openError(_ configuration: String) throws -> ReservoirError {
        try #require(throws: ReservoirError.self) { try openStore(configuration) }
    }

    @Test func aRegularFileIsNotAnEnvironment() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let file = dir.path + "/plain.txt"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: file))
        let error = try openError("lmdb:\(file)")
        #expect(error.code == .cannotOpen)
        #expect(error.nativeCode == ENOTDIR)
        #expect(error.message.contains(file) && error.message.contains("is a file"), "\(error)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "hello")
    }

    @Test func aDirectoryOfOtherFilesIsNotAnEnvironment() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        try Data("notes".utf8).write(to: URL(fileURLWithPath: dir.path + "/readme.txt"))
        let error = try openError("lmdb:\(dir.path)")
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains(dir.path) && error.message.contains("not an LMDB environment"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/data.mdb"))
    }

    @Test func aDamagedDataFileIsRefusedWithLMDBsCode() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let garbage = Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: dir.path + "/data.mdb"))
        let error = try openError("lmdb:\(dir.path)")
        #expect(error.code == .cannotOpen)
        #expect(error.nativeCode == CLMDB_INVALID)
        #expect(error.message.contains(dir.path), "\(error)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/data.mdb")) == garbage)
    }

    @Test func aMissingParentDirectoryIsNamed() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let error = try openError("lmdb:\(dir.path)/no/such/env")
        #expect(error.code == .cannotOpen)
        #expect(error.nativeCode == ENOENT)
        #expect(error.message.contains("\(dir.path)/no/such"), "\(error)")
    }

    @Test func anLMDBEnvironmentOfAnotherProgramIsRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        // A plain LMDB environment with a record in its main database.
        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == 0)
        #expect(mdb_env_open(env, dir.path, 0, 0o644) == 0)
        var txn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, 0, &txn) == 0)
        var dbi = MDB_dbi()
        #expect(mdb_dbi_open(txn, nil, 0, &dbi) == 0)
        var key = Array("k".utf8)
        var value = Array("v".utf8)
        key.withUnsafeMutableBytes { k in
            value.withUnsafeMutableBytes { v in
                var mk = clmdb_val(k.baseAddress, k.count)
                var mv = clmdb_val(v.baseAddress, v.count)
                _ = mdb_put(txn, dbi, &mk, &mv, 0)
            }
        }
        #expect(mdb_txn_commit(txn) == 0)
        mdb_env_close(env)
        let error = try openError("lmdb:\(dir.path)")
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains(dir.path) && error.message.contains("not a Reservoir store"), "\(error)")
    }

    /// A store written by a newer version of the library (a format this one does not read)
    /// is refused, naming the path and both formats, and is left as it was.
    @Test func aNewerFormatIsRefusedAndLeftAlone() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        do {
            let store = try openStore("lmdb:\(path)")
            defer { store.close() }
            try store.write { tx in try tx.insert(Note(id: 1, title: "kept")) }
            let backend = try #require(store.backend as? LMDBBackend)
            try backend.write { tx in
                let t = try #require(tx as? LMDBTransaction)
                try t.put(try #require(try t.database(StoreFormat.metaDatabase)), StoreFormat.formatKey, [0, 0, 0, 6])
            }
        }
        let error = try openError("lmdb:\(path)")
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains(path) && error.message.contains("format version 6") && error.message.contains("1 to 5"), "\(error)")
        // Nothing was written over: the format is still the newer one.
        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == 0)
        #expect(mdb_env_set_maxdbs(env, 8) == 0)
        #expect(mdb_env_open(env, path, CLMDB_RDONLY, 0o644) == 0)
        var txn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn) == 0)
        var meta = MDB_dbi()
        #expect(mdb_dbi_open(txn, StoreFormat.metaDatabase, 0, &meta) == 0)
        var key = StoreFormat.formatKey
        var stored = MDB_val()
        let rc = key.withUnsafeMutableBytes { k in
            var mk = clmdb_val(k.baseAddress, k.count)
            return mdb_get(txn, meta, &mk, &stored)
        }
        #expect(rc == 0)
        #expect(Array(UnsafeRawBufferPointer(start: stored.mv_data, count: stored.mv_size)) == [0, 0, 0, 6])
        mdb_txn_abort(txn)
        mdb_env_close(env)
    }

    @Test(arguments: [
        ("durability=fast", "durability"), ("mapsize=lots", "mapsize"), ("maxreaders=0", "maxreaders"),
        ("mapsize=2GiB&maxmapsize=1GiB", "mapsize"), ("logretention=0", "logretention"), ("turbo=1", "turbo"),
        // Near Int64.max these once trapped with an overflow while rounding to a page.
        ("mapsize=9223372036854775807", "mapsize"), ("mapsize=9223372036854771712", "mapsize"),
        ("maxmapsize=9223372036854775807", "maxmapsize"), ("mapsize=65TiB", "mapsize"),
    ])
    func badOptionsAreNamed(option: String, name: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let error = try openError("lmdb:\(dir.path)/env?\(option)")
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains(name), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/env"))
    }

    /// Found by the configuration fuzzer: finding the parent of `a//🙂` trapped inside
    /// NSString.
    @Test(arguments: ["/x//\u{1F642}", "/x//\u{1F642}/", "/\u{1F642}\u{1F642}//é//"])
    func unusualPathsOpenOrFailCleanly(suffix: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        do {
            let store = try openStore("lmdb:\(dir.path)\(suffix)")
            store.close()
        } catch let error as ReservoirError {
            #expect(error.code == .cannotOpen, "\(error)")
        }
        #expect(LMDBEnvironment.parent(of: "a//\u{1F642}") == "a")
        #expect(LMDBEnvironment.parent(of: "/a") == "/")
        #expect(LMDBEnvironment.parent(of: "env") == ".")
        #expect(LMDBEnvironment.parent(of: "/x/y//") == "/x")
    }

    @Test func anEmptyLocationIsAConfigurationError() throws {
        let error = try openError("lmdb:")
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("lmdb:"))
    }

    @Test func tooLongAnIDIsAnErrorAndTooLongAnIndexedValueStillWorks() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env")
        defer { backend.close() }
        let entity = EntityDescription(name: "long", idColumn: "id", fields: ["id", "v"], indexes: ["v"])
        let longID = Value.text(String(repeating: "i", count: 600))
        let error = try #require(throws: ReservoirError.self) {
            try backend.write { tx in try tx.put(entity, id: longID, row: Row([("id", longID)])) }
        }
        #expect(error.code == .valueOutOfRange)
        let longValue = Value.text(String(repeating: "v", count: 2000))
        try backend.write { tx in
            try tx.put(entity, id: .integer(1), row: Row([("id", .integer(1)), ("v", longValue)]))
            try tx.put(entity, id: .integer(2), row: Row([("id", .integer(2)), ("v", .text("short"))]))
        }
        for predicate: RowPredicate in [.compare(column: "v", .equal, longValue), .hasPrefix(column: "v", "vvv"), .compare(column: "v", .greater, .text("t"))] {
            let query = try Query(entity: entity, predicate: predicate)
            #expect(try backend.read { try $0.fetch(query) }.map { $0.value("id") } == [.integer(1)], "\(predicate)")
        }
        try backend.write { tx in try tx.delete(entity, id: .integer(1)) }
        #expect(try backend.read { try $0.fetch(Query(entity: entity, predicate: .hasPrefix(column: "v", "v"))) }.isEmpty)
    }

    @Test func aClosedStoreThrowsClosed() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        store.close()
        let error = try #require(throws: ReservoirError.self) { try store.fetch(Note.self) }
        #expect(error.code == .closed)
    }
}
