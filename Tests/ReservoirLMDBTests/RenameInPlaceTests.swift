import CLMDB
import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import Testing
@testable import ReservoirLMDB

/// Issue #33: a migration's field rename is recorded in `meta` (``RenameHistory``) instead of
/// rewriting every row. The conformance suite checks what every backend shows; these check
/// the LMDB side: the rows are not touched, the layouts shared across entities and renames are
/// read right, and the format, rollbacks and other processes.
@Suite("LMDB: renaming columns in place", .serialized)
struct RenameInPlaceTests {
    static let notes = EntityDescription(name: "notes", fields: ["id", "title", "rank"], indexes: ["rank"], integerIDs: true)

    static func rename(_ old: String, _ new: String) -> RenameHistory.Rename { .init(old: old, new: new) }

    // MARK: - The history, without a store

    @Test func aLayoutReadsThroughTheEntriesAboveItsNumber() throws {
        let history = RenameHistory(entries: [
            .init(watermark: 3, renames: [Self.rename("a", "b")]),
            .init(watermark: 5, renames: [Self.rename("b", "c"), Self.rename("x", "y")]),
        ])
        #expect(history.floor == 5)
        let columns = ["id", "a", "b", "x"]
        #expect(history.view(of: RowLayout(number: 0, columns: ["id", "a", "x"])).columns == ["id", "c", "y"])
        #expect(history.view(of: RowLayout(number: 3, columns: ["id", "b", "x"])).columns == ["id", "c", "y"])
        #expect(history.view(of: RowLayout(number: 4, columns: columns)).columns == ["id", "a", "c", "y"])
        let fresh = RowLayout(number: 5, columns: columns)
        #expect(history.view(of: fresh) === fresh, "a layout at or above the newest watermark is read as stored")
        #expect(history.renamed(["id", "a"], from: nil) == ["id", "c"], "a version 1 row predates every entry")
        #expect(history.originalName(of: "c") == "a")
        #expect(history.originalName(of: "y") == "x")
        #expect(history.originalName(of: "a") == nil, "a renamed-away name is held by no old row")
        #expect(history.originalName(of: "id") == "id")
    }

    @Test func theHistoryRoundTripsAndDamageIsRefused() throws {
        let history = RenameHistory(entries: [
            .init(watermark: 0, renames: [Self.rename("title", "name")]),
            .init(watermark: 0, renames: [Self.rename("name", "héading")]),
            .init(watermark: 70000, renames: [Self.rename("a", "b"), Self.rename("c", "d")]),
        ])
        let bytes = StoreFormat.encodeRenames(history)
        let decoded = try #require(bytes.withUnsafeBytes { StoreFormat.decodeRenames($0) })
        #expect(decoded.entries == history.entries)
        let damages: [[UInt8]] = [[], [2] + bytes.dropFirst(), Array(bytes.dropLast()), bytes + [0], [1, 0]]
        for damaged in damages {
            #expect(damaged.withUnsafeBytes { StoreFormat.decodeRenames($0) } == nil, "\(damaged)")
        }
        var decreasing = ByteWriter()
        decreasing.bytes = [1]
        decreasing.varint(2)
        for watermark in [5, 4] as [UInt64] {
            decreasing.varint(watermark)
            decreasing.varint(1)
            decreasing.string("a")
            decreasing.string("b")
        }
        #expect(decreasing.bytes.withUnsafeBytes { StoreFormat.decodeRenames($0) } == nil, "watermarks never decrease")
    }

    /// Two entities naming the same layout number in one transaction's reader: the reader's
    /// remembered layout must not carry one entity's renames over to the other's rows.
    @Test func theReaderKeepsEntitiesApartOnOneLayoutNumber() throws {
        let layout = RowLayout(number: 2, columns: ["id", "a"])
        let history = RenameHistory(entries: [.init(watermark: 3, renames: [Self.rename("a", "b")])])
        let bytes = RowCodec.encode(Row(columns: ["id", "a"], values: [.integer(1), .text("v")]), layout: 2)
        var reader = StoredRowDecoder()
        let lookup: (UInt32) -> RowLayout? = { $0 == 2 ? layout : nil }
        let renamed = try #require(bytes.withUnsafeBytes { reader.decode($0, renames: history, layouts: lookup) })
        let plain = try #require(bytes.withUnsafeBytes { reader.decode($0, renames: nil, layouts: lookup) })
        let again = try #require(bytes.withUnsafeBytes { reader.decode($0, renames: history, layouts: lookup) })
        #expect(renamed.columns == ["id", "b"] && again.columns == ["id", "b"])
        #expect(plain.columns == ["id", "a"])
        #expect(renamed.value("b") == .text("v"))

        let named = namedRowBytes(Row(columns: ["id", "a"], values: [.integer(1), .text("v")]))
        let old = try #require(named.withUnsafeBytes { reader.decode($0, renames: history, layouts: lookup) })
        #expect(old.columns == ["id", "b"], "a version 1 row is renamed too")
        var field = FieldReader(column: "b", renames: history)
        #expect(named.withUnsafeBytes { field.field(in: $0, layouts: lookup) }?.value == .text("v"))
        #expect(bytes.withUnsafeBytes { field.field(in: $0, layouts: lookup) }?.value == .text("v"))
        var gone = FieldReader(column: "a", renames: history)
        #expect(named.withUnsafeBytes { gone.field(in: $0, layouts: lookup) }?.value == .null)
        #expect(bytes.withUnsafeBytes { gone.field(in: $0, layouts: lookup) }?.value == .null)
    }

    // MARK: - Raw environment access

    /// Runs `body` in a raw LMDB transaction on the environment at `path` (the store closed),
    /// read-only unless `writing`, which commits when `body` returns.
    static func withRawTransaction<R>(_ path: String, writing: Bool = false, _ body: (OpaquePointer) throws -> R) throws -> R {
        var env: OpaquePointer?
        guard mdb_env_create(&env) == 0, let env else { throw MigrationDatabaseTests.CLIFailure("mdb_env_create failed") }
        defer { mdb_env_close(env) }
        mdb_env_set_maxdbs(env, 64)
        guard mdb_env_open(env, path, writing ? 0 : CLMDB_RDONLY, 0o644) == 0 else { throw MigrationDatabaseTests.CLIFailure("cannot open \(path)") }
        var txn: OpaquePointer?
        guard mdb_txn_begin(env, nil, writing ? 0 : CLMDB_RDONLY, &txn) == 0, let txn else { throw MigrationDatabaseTests.CLIFailure("mdb_txn_begin failed") }
        let result: R
        do {
            result = try body(txn)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        if writing {
            guard mdb_txn_commit(txn) == 0 else { throw MigrationDatabaseTests.CLIFailure("mdb_txn_commit failed") }
        } else {
            mdb_txn_abort(txn)
        }
        return result
    }

    /// The records of named database `name`, nil when there is no such database, read with the
    /// C API once the store is closed.
    static func raw(_ path: String, _ name: String) throws -> [(key: [UInt8], value: [UInt8])]? {
        try withRawTransaction(path) { txn in
            var dbi: MDB_dbi = 0
            guard mdb_dbi_open(txn, name, 0, &dbi) == 0 else { return nil }
            var cursor: OpaquePointer?
            guard mdb_cursor_open(txn, dbi, &cursor) == 0, let cursor else { throw MigrationDatabaseTests.CLIFailure("mdb_cursor_open failed") }
            defer { mdb_cursor_close(cursor) }
            var records: [(key: [UInt8], value: [UInt8])] = []
            var key = MDB_val()
            var data = MDB_val()
            var op = MDB_FIRST
            while mdb_cursor_get(cursor, &key, &data, op) == 0 {
                records.append(([UInt8](UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)),
                                [UInt8](UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))))
                op = MDB_NEXT
            }
            return records
        }
    }

    /// Stores `value` under `key` in named database `name` with the C API, the store closed.
    static func putRaw(_ path: String, _ name: String, key: [UInt8], value: [UInt8]) throws {
        try withRawTransaction(path, writing: true) { txn in
            var dbi: MDB_dbi = 0
            guard mdb_dbi_open(txn, name, 0, &dbi) == 0 else { throw MigrationDatabaseTests.CLIFailure("no \(name)") }
            var k = MDB_val()
            var v = MDB_val()
            let rc = key.withUnsafeBytes { kb in
                value.withUnsafeBytes { vb in
                    k.mv_size = kb.count
                    k.mv_data = UnsafeMutableRawPointer(mutating: kb.baseAddress)
                    v.mv_size = vb.count
                    v.mv_data = UnsafeMutableRawPointer(mutating: vb.baseAddress)
                    return mdb_put(txn, dbi, &k, &v, 0)
                }
            }
            guard rc == 0 else { throw MigrationDatabaseTests.CLIFailure("mdb_put: \(rc)") }
        }
    }

    /// The stored format and the `renames/` keys of `meta`.
    static func formatAndRenames(_ path: String) throws -> (format: UInt32, renames: [String]) {
        let meta = try #require(try raw(path, "meta"))
        let format = meta.first { $0.key == Array("format".utf8) }.map { $0.value.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } } ?? 0
        let renames = meta.map { String(decoding: $0.key, as: UTF8.self) }.filter { $0.hasPrefix("renames/") }
        return (format, renames)
    }

    /// Runs `body` with a new store in a temporary directory, closed and removed afterwards.
    static func withNewStore(_ body: (Store) throws -> Void) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:" + dir.path + "/env")
        defer { store.close() }
        try body(store)
    }

    static func fill(_ store: Store, count: Int = 200) throws {
        try store.write { tx in
            for id in 1...count {
                _ = try tx.putRow(Row(columns: ["id", "title", "rank"], values: [.integer(Int64(id)), .text("note \(id)"), .integer(Int64(id % 7))]), in: Self.notes)
            }
        }
    }

    static func stored(_ store: Store, _ entity: String = "notes") throws -> EntityDescription {
        try #require(try store.read { try $0.entities().first { $0.name == entity } })
    }

    static func row(_ store: Store, _ id: Int64) throws -> Row? {
        try store.backend.read { try $0.row("notes", id: .integer(id)) }
    }

    static func rows(_ store: Store, _ query: (EntityDescription) throws -> Query) throws -> [Row] {
        try store.read { try $0.rows(query(try $0.entities().first { $0.name == "notes" } ?? Self.notes)) }
    }

    // MARK: - Store level

    struct Renamed: Storable {
        var id: Int
        var name: String?
        var rank: Int?
        static let schema = Schema<Renamed>("notes", fields: [.field(\.name), .field(\.rank, indexed: true)])
    }

    @Test(.timeLimit(.minutes(2)))
    func aRenameLeavesEveryRowAsItWasAndEveryReadSeesTheNewName() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        var store = try openStore("lmdb:" + path)
        try Self.fill(store)
        try store.migrate(Migrations { SchemaVersion(1) })
        store.close()
        let before = try #require(try Self.raw(path, "rows/notes"))
        let indexBefore = try #require(try Self.raw(path, "index/notes/rank"))
        #expect(try Self.formatAndRenames(path).format == 4)

        store = try openStore("lmdb:" + path)
        let live = Locked<[[String?]]>([])
        let subscription = store.objectsPublisher(for: FetchRequest<Renamed>(where: \.rank == 3, sortBy: [.descending(\.name)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { notes in live.withLock { $0.append(notes.map(\.name)) } })
        defer { subscription.cancel() }
        let progress = Locked<[Int]>([])
        try store.migrate(Migrations { SchemaVersion(1); SchemaVersion(2, .renameField("title", to: "name", in: "notes")) }) { report in
            progress.withLock { $0.append(report.recordsDone) }
        }
        #expect(progress.withLock { $0 } == [0, 200], "the step reports the whole entity done at once")
        #expect(try Self.stored(store).fields == ["id", "name", "rank"])
        let expected = (1...200).filter { $0 % 7 == 3 }.map { "note \($0)" }.sorted(by: >)
        let arrived = await eventually(timeout: .seconds(5)) { live.withLock { $0.last } == expected }
        #expect(arrived, "the live fetch re-read under the new name: \(live.withLock { $0.last ?? [] })")

        // Reads, predicates (scan and index), sorts, counts and point reads.
        let one = try #require(try Self.row(store, 5))
        #expect(one.value("name") == .text("note 5") && one.value("title").isNull)
        let byName = try Self.rows(store) { try Query(entity: $0, predicate: .compare(column: "name", .equal, .text("note 42"))) }
        #expect(byName.map { $0.value("id") } == [.integer(42)])
        let byRank = try Self.rows(store) { try Query(entity: $0, predicate: .compare(column: "rank", .equal, .integer(3)), sort: [SortTerm(column: "name", ascending: false)], limit: 3) }
        #expect(byRank.map { $0.value("name") } == expected.prefix(3).map { .text($0) })
        let prefixed = try Self.rows(store) { try Query(entity: $0, predicate: .hasPrefix(column: "name", "note 19"), sort: [SortTerm(column: "name")]) }
        #expect(prefixed.map { $0.value("id") } == [19, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199].map { .integer($0) })
        #expect(try store.fetch(Renamed.self).count == 200)
        subscription.cancel()
        store.close()
        let renamed = try #require(try Self.raw(path, "rows/notes"))
        #expect(renamed.map(\.key) == before.map(\.key))
        #expect(renamed.map(\.value) == before.map(\.value), "no row was rewritten")
        #expect(try Self.raw(path, "index/notes/rank")?.map(\.key) == indexBefore.map(\.key))
        #expect(try Self.formatAndRenames(path) == (5, ["renames/notes"]))
        store = try openStore("lmdb:" + path)

        // An index on the new name is built from the rows as they read now.
        try store.migrate(Migrations {
            SchemaVersion(1); SchemaVersion(2, .renameField("title", to: "name", in: "notes"))
            SchemaVersion(3, .addIndex(on: "name", in: "notes"))
        })
        #expect(try Self.stored(store).indexes.sorted() == ["name", "rank"])
        let indexed = try Self.rows(store) { try Query(entity: $0, predicate: .compare(column: "name", .greaterOrEqual, .text("note 98")), sort: [SortTerm(column: "name")]) }
        #expect(indexed.map { $0.value("name") } == ["note 98", "note 99"].map { .text($0) })
        store.close()

        // The index's first put (which carries the description) rewrote one row, no more.
        let after = try #require(try Self.raw(path, "rows/notes"))
        #expect(zip(after, before).filter { $0.0.value != $0.1.value }.count == 1)
        #expect(try Self.raw(path, "index/notes/name")?.count == 200)
        #expect(try Self.formatAndRenames(path) == (5, ["renames/notes"]))

        // Reopened (a fresh process's caches): the same.
        store = try openStore("lmdb:" + path)
        defer { store.close() }
        let reopened = try Self.rows(store) { try Query(entity: $0, sort: [SortTerm(column: "name", ascending: false)], limit: 2) }
        #expect(reopened.map { $0.value("name") } == ["note 99", "note 98"].map { .text($0) })
        #expect(reopened.allSatisfy { $0.columns == ["id", "name", "rank"] })
    }

    /// Layout numbers are shared by column list. After `a → b`, the old layout `[id, a, b]`
    /// (another entity's) must not be reused for a new row of the renamed entity holding a
    /// new field `a`: that row would read as `[id, b, b]`.
    @Test func aNewRowNeverReusesALayoutBelowItsEntitysWatermark() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        let store = try openStore("lmdb:" + path)
        defer { store.close() }
        let notes = EntityDescription(name: "notes", fields: ["id", "a"], integerIDs: true)
        let other = EntityDescription(name: "other", fields: ["id", "a", "b"], integerIDs: true)
        try store.write { tx in
            _ = try tx.putRow(Row(columns: ["id", "a"], values: [1, "old a"]), in: notes)
            _ = try tx.putRow(Row(columns: ["id", "a", "b"], values: [1, "other a", "other b"]), in: other)
        }
        try store.migrate(Migrations { SchemaVersion(1); SchemaVersion(2, .renameField("a", to: "b", in: "notes")) })
        store.close()
        #expect(try Self.formatAndRenames(path).renames == ["renames/notes"], "in place although another entity's layout holds b")

        let reopened = try openStore("lmdb:" + path)
        defer { reopened.close() }
        let both = EntityDescription(name: "notes", fields: ["id", "b", "a"], integerIDs: true)
        try reopened.write { tx in
            _ = try tx.putRow(Row(columns: ["id", "a", "b"], values: [2, "new a", "new b"]), in: both)
        }
        try reopened.backend.read { snapshot in
            let old = try #require(try snapshot.row("notes", id: 1))
            #expect(old.value("b") == .text("old a") && old.value("a").isNull)
            let new = try #require(try snapshot.row("notes", id: 2))
            #expect(new.value("a") == .text("new a") && new.value("b") == .text("new b"), "\(new)")
            let others = try #require(try snapshot.row("other", id: 1))
            #expect(others.value("a") == .text("other a") && others.value("b") == .text("other b"))
            let sorted = try snapshot.fetch(try Query(entity: both, sort: [SortTerm(column: "b")]))
            #expect(sorted.map { $0.value("id") } == [2, 1])
            let matching = try snapshot.fetch(try Query(entity: both, predicate: .compare(column: "a", .equal, .text("new a"))))
            #expect(matching.map { $0.value("id") } == [2])
        }
    }

    /// A row of the entity that holds the new name (undeclared) keeps the rename from being
    /// made in place: the rewrite then decides, and refuses a non-null value.
    @Test func aNewNameARowHoldsIsNotRenamedInPlace() throws {
        try Self.withNewStore { store in
            let notes = EntityDescription(name: "notes", fields: ["id", "a"], integerIDs: true)
            try store.write { tx in
                _ = try tx.putRow(Row(columns: ["id", "a"], values: [1, "x"]), in: notes)
                _ = try tx.putRow(Row(columns: ["id", "a", "b"], values: [2, "y", "taken"]), in: notes)
            }
            #expect(throws: ReservoirError.self) {
                try store.migrate(Migrations { SchemaVersion(1); SchemaVersion(2, .renameField("a", to: "b", in: "notes")) })
            }
            try store.backend.read { snapshot in
                let row = try #require(try snapshot.row("notes", id: 2))
                #expect(row.value("a") == .text("y") && row.value("b") == .text("taken"))
            }
        }
    }

    @Test func chainedRenamesAndASwapInOneVersion() throws {
        try Self.withNewStore { store in
            let notes = EntityDescription(name: "notes", fields: ["id", "a", "b", "c"], integerIDs: true)
            try store.write { tx in
                for id in 1...50 {
                    _ = try tx.putRow(Row(columns: ["id", "a", "b", "c"], values: [.integer(Int64(id)), .text("a\(id)"), .text("b\(id)"), .integer(Int64(id))]), in: notes)
                }
            }
            let v2 = SchemaVersion(2, .renameField("c", to: "d", in: "notes"))
            // a swap: a → t, b → a, t → b
            let v3 = SchemaVersion(3, .renameField("a", to: "t", in: "notes"), .renameField("b", to: "a", in: "notes"), .renameField("t", to: "b", in: "notes"))
            let v4 = SchemaVersion(4, .renameField("d", to: "e", in: "notes"), .renameField("e", to: "c", in: "notes"))
            try store.migrate(Migrations { SchemaVersion(1); v2 })
            // A row written between two renames names a layout above the first watermark.
            try store.write { tx in
                _ = try tx.putRow(Row(columns: ["id", "a", "b", "d"], values: [51, "a51", "b51", 51]), in: EntityDescription(name: "notes", fields: ["id", "a", "b", "d"], integerIDs: true))
            }
            try store.migrate(Migrations { SchemaVersion(1); v2; v3; v4 })
            let stored = try Self.stored(store)
            #expect(stored.fields == ["id", "b", "a", "c"])
            let rows = try store.read { try $0.rows(try Query(entity: stored, sort: [SortTerm(column: "id")])) }
            #expect(rows.count == 51)
            for (offset, row) in rows.enumerated() {
                let id = offset + 1
                #expect(row.value("a") == .text("b\(id)") && row.value("b") == .text("a\(id)") && row.value("c") == .integer(Int64(id)), "\(row)")
                #expect(row.value("d").isNull && row.value("e").isNull && row.value("t").isNull)
            }
            let sorted = try store.read { try $0.rows(try Query(entity: stored, predicate: .compare(column: "c", .less, .integer(4)), sort: [SortTerm(column: "a", ascending: false)])) }
            #expect(sorted.map { $0.value("id") } == [3, 2, 1])
        }
    }

    /// A version that fails after its rename leaves no entry, no format 5, and no trace in this
    /// process's caches: the next reads and a later run of the rename see the committed state.
    @Test func aVersionFailingAfterItsRenameLeavesNothing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        var store = try openStore("lmdb:" + path)
        try Self.fill(store, count: 20)
        struct Refused: Error {}
        let failing = SchemaVersion(2, .renameField("title", to: "name", in: "notes"), .transform("notes") { row in
            if row.value("id") == .integer(13) { throw Refused() }
        })
        #expect(throws: ReservoirError.self) { try store.migrate(Migrations { SchemaVersion(1); failing }) }
        #expect(try Self.stored(store).fields == ["id", "title", "rank"])
        let row = try #require(try Self.row(store, 13))
        #expect(row.value("title") == .text("note 13") && row.value("name").isNull)
        // The entity's writes still reuse its layout: the failed rename left no watermark.
        try store.write { tx in _ = try tx.putRow(Row(columns: ["id", "title", "rank"], values: [21, "note 21", 0]), in: Self.notes) }
        store.close()
        #expect(try Self.formatAndRenames(path) == (4, []))
        let layouts = try #require(try Self.raw(path, "meta")).filter { $0.key.starts(with: Array("layout/".utf8)) }
        #expect(layouts.filter { $0.value.withUnsafeBytes { StoreFormat.decodeLayout($0) } == ["id", "title", "rank"] }.count == 1)

        store = try openStore("lmdb:" + path)
        defer { store.close() }
        try store.migrate(Migrations { SchemaVersion(1); SchemaVersion(2, .renameField("title", to: "name", in: "notes")) })
        let renamed = try #require(try Self.row(store, 21))
        #expect(renamed.value("name") == .text("note 21"))
    }

    /// An indexed column's index moves to the database named by the new name; the rows stay.
    /// Migrations without a rename keep format 4.
    @Test func aRenamedIndexedColumnMovesItsIndexAndMigrationsWithoutRenamesKeepFormat4() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        var store = try openStore("lmdb:" + path)
        try Self.fill(store, count: 30)
        let v2 = SchemaVersion(2, .addField("extra", to: "notes", default: 1), .addIndex(on: "title", in: "notes"), .dropField("extra", from: "notes"))
        try store.migrate(Migrations { SchemaVersion(1); v2 })
        store.close()
        #expect(try Self.formatAndRenames(path) == (4, []))
        let before = try #require(try Self.raw(path, "rows/notes"))
        let rankIndex = try #require(try Self.raw(path, "index/notes/rank"))
        #expect(rankIndex.count == 30)

        store = try openStore("lmdb:" + path)
        defer { store.close() }
        try store.migrate(Migrations { SchemaVersion(1); v2; SchemaVersion(3, .renameField("rank", to: "score", in: "notes")) })
        #expect(try Self.stored(store).indexes.sorted() == ["score", "title"])
        let found = try Self.rows(store) { try Query(entity: $0, predicate: .compare(column: "score", .equal, .integer(2))) }
        #expect(found.map { $0.value("id") } == [2, 9, 16, 23, 30].map { .integer($0) })
        let ordered = try Self.rows(store) { try Query(entity: $0, sort: [SortTerm(column: "score", ascending: false)], limit: 2) }
        #expect(ordered.map { $0.value("id") } == [6, 13].map { .integer($0) }, "score 6, then the id")
        // A write after the rename keeps the moved index up to date.
        try store.write { tx in
            _ = try tx.putRow(Row(columns: ["id", "title", "score"], values: [9, "changed", 100]), in: Self.stored(store))
        }
        let moved = try Self.rows(store) { try Query(entity: $0, predicate: .compare(column: "score", .greaterOrEqual, .integer(100))) }
        #expect(moved.map { $0.value("id") } == [.integer(9)])
        store.close()
        #expect(try Self.formatAndRenames(path) == (5, ["renames/notes"]))
        #expect(try Self.raw(path, "index/notes/score")?.count == 30)
        #expect(try Self.raw(path, "index/notes/rank")?.count ?? 0 == 0, "the old index database is left empty")
        let after = try #require(try Self.raw(path, "rows/notes"))
        #expect(zip(after, before).filter { $0.0.value != $0.1.value }.map(\.0.key) == [KeyEncoding.encode(.integer(9))],
                "only the row written after the rename changed")
    }

    @Test func aDamagedRenameEntryIsCorruptNamingTheEntity() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        var store = try openStore("lmdb:" + path)
        try Self.fill(store, count: 3)
        try store.migrate(Migrations { SchemaVersion(1); SchemaVersion(2, .renameField("title", to: "name", in: "notes")) })
        store.close()
        try Self.putRaw(path, "meta", key: Array("renames/notes".utf8), value: [1, 1, 0, 1, 9])
        store = try openStore("lmdb:" + path)
        defer { store.close() }
        let error = try #require(throws: ReservoirError.self) { _ = try Self.row(store, 1) }
        #expect(error.code == .corrupt)
        #expect(error.message.contains("column renames of entity \"notes\""), "\(error.message)")
    }

    /// Another process holding the store open (its layouts and renames cached) reads the new
    /// names once the migration commits, and its writes of the entity name a layout at or above
    /// the watermark.
    @Test(.timeLimit(.minutes(2)))
    func anotherProcessSeesTheRenameOnceCommitted() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        let go = dir.path + "/go"
        let store = try openStore(configuration)
        defer { store.close() }
        try Self.fill(store, count: 3)
        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["read-across", configuration, "notes", go])
        let first = await helper.waitForLine(within: 30) { $0 == "read" }
        #expect(first != nil, "helper output: \(helper.output)")
        #expect(helper.output.contains("row 2 id=2 title='note 2' rank=2"), "\(helper.output)")
        try store.migrate(Migrations { SchemaVersion(1); SchemaVersion(2, .renameField("title", to: "name", in: "notes")) })
        #expect(FileManager.default.createFile(atPath: go, contents: Data()))
        #expect(await helper.waitForExit(within: 30) == 0, "helper output: \(helper.output) \(helper.errorText)")
        let output = helper.output
        let second = try #require(output.firstIndex(of: "read")).advanced(by: 1)
        #expect(output[second...].contains("row 2 id=2 name='note 2' rank=2"), "\(output)")
        #expect(output.last == "wrote")
        let written = try #require(try Self.row(store, 1000))
        #expect(written.columns == ["id", "name", "rank"] && written.value("name") == .text("helper name"), "\(written)")
        let old = try #require(try Self.row(store, 1))
        #expect(old.value("name") == .text("note 1"))
    }
}
