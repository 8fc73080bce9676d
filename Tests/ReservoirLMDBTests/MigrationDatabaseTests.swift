import CLMDB
import Foundation
import Reservoir
import ReservoirConformance
import Testing

/// What a migration leaves in the environment's list of named databases, read with the C API
/// once the store is closed: the conformance cases cannot see it through the SPI.
@Suite("LMDB: the named databases a migration leaves")
struct MigrationDatabaseTests {
    static let notes = EntityDescription(name: "notes", fields: ["id", "title", "rank"], indexes: ["title", "rank"], integerIDs: true)

    /// The environment's named databases (the main database's keys), sorted.
    static func namedDatabases(_ path: String) throws -> [String] {
        var env: OpaquePointer?
        guard mdb_env_create(&env) == 0, let env else { throw CLIFailure("mdb_env_create failed") }
        defer { mdb_env_close(env) }
        guard mdb_env_open(env, path, CLMDB_RDONLY, 0o644) == 0 else { throw CLIFailure("cannot open \(path)") }
        var txn: OpaquePointer?
        guard mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn) == 0, let txn else { throw CLIFailure("mdb_txn_begin failed") }
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        guard mdb_cursor_open(txn, CLMDB_MAIN_DBI, &cursor) == 0, let cursor else { throw CLIFailure("mdb_cursor_open failed") }
        defer { mdb_cursor_close(cursor) }
        var names: [String] = []
        var key = MDB_val()
        var data = MDB_val()
        var op = MDB_FIRST
        while mdb_cursor_get(cursor, &key, &data, op) == 0 {
            names.append(String(decoding: UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size), as: UTF8.self))
            op = MDB_NEXT
        }
        return names.sorted()
    }

    struct CLIFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Opens the store, runs `body`, closes it, and returns the named databases then.
    static func afterward(_ path: String, _ body: (Store) throws -> Void) throws -> [String] {
        let store = try openStore("lmdb:" + path)
        do {
            try body(store)
        } catch {
            store.close()
            throw error
        }
        store.close()
        return try namedDatabases(path).filter { $0.hasPrefix("rows/") || $0.hasPrefix("index/") }
    }

    static func titles(_ store: Store, _ entity: String) throws -> [Value] {
        try store.read { snapshot in
            guard let stored = try snapshot.entities().first(where: { $0.name == entity }) else { return [] }
            return try snapshot.rows(Query(entity: stored, sort: [SortTerm(column: "title")])).map { $0.value("title") }
        }
    }

    @Test func renamingAndMergingEntitiesDeleteTheOldDatabasesInTheMigrationsTransaction() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        let v1 = SchemaVersion(1)
        let v2 = SchemaVersion(2, .renameEntity("notes", to: "tasks"))
        let v3 = SchemaVersion(3, .splitEntity("tasks", fields: ["rank"], into: "ranks"), .renameEntity("tasks", to: "notes"))
        let v4 = SchemaVersion(4, .mergeEntity("ranks", into: "notes"))

        let first = try Self.afterward(path) { store in
            try store.write { tx in
                for id in 1...3 {
                    _ = try tx.putRow(Row(columns: ["id", "title", "rank"], values: [.integer(Int64(id)), .text("note \(id)"), .integer(Int64(10 - id))]), in: Self.notes)
                }
            }
            try store.migrate(Migrations { v1 })
        }
        #expect(first == ["index/notes/rank", "index/notes/title", "rows/notes", "rows/reservoir_schema_versions"])

        let renamed = try Self.afterward(path) { store in
            try store.migrate(Migrations { v1; v2 })
            #expect(try Self.titles(store, "tasks") == [.text("note 1"), .text("note 2"), .text("note 3")])
        }
        #expect(renamed == ["index/tasks/rank", "index/tasks/title", "rows/reservoir_schema_versions", "rows/tasks"],
                "the renamed entity's row and index databases are gone")

        // Back to the old name in the same process that had the old databases open, with a version
        // that fails after the renames first: the handles it forgot are opened again.
        let back = try Self.afterward(path) { store in
            #expect(throws: ReservoirError.self) {
                try store.migrate(Migrations {
                    v1; v2
                    SchemaVersion(3, .renameEntity("tasks", to: "notes"), .renameEntity("notes", to: "tasks"),
                                  .transform("tasks") { _ in throw ReservoirError(.misuse, "deliberate failure") })
                })
            }
            #expect(try Self.titles(store, "tasks") == [.text("note 1"), .text("note 2"), .text("note 3")], "rolled back, readable")
            try store.write { tx in
                _ = try tx.putRow(Row(columns: ["id", "title", "rank"], values: [.integer(4), .text("note 4"), .integer(6)]),
                                  in: try #require(try store.read { try $0.entities().first { $0.name == "tasks" } }))
            }
            try store.migrate(Migrations { v1; v2; v3 })
            #expect(try Self.titles(store, "notes") == [.text("note 1"), .text("note 2"), .text("note 3"), .text("note 4")])
            let byRank = try Query(entity: try #require(try store.read { try $0.entities().first { $0.name == "ranks" } }),
                                   predicate: .compare(column: "rank", .less, .integer(8)))
            #expect(try store.read { try $0.rows(byRank) }.map { $0.value("id") } == [.integer(3), .integer(4)], "the split-off index")
        }
        #expect(back == ["index/notes/title", "index/ranks/rank", "rows/notes", "rows/ranks", "rows/reservoir_schema_versions"])

        let merged = try Self.afterward(path) { store in
            try store.migrate(Migrations { v1; v2; v3; v4 })
            let byRank = try Query(entity: try #require(try store.read { try $0.entities().first { $0.name == "notes" } }),
                                   predicate: .compare(column: "rank", .less, .integer(8)))
            #expect(try store.read { try $0.rows(byRank) }.map { $0.value("id") } == [.integer(3), .integer(4)], "the merged index")
        }
        #expect(merged == ["index/notes/rank", "index/notes/title", "rows/notes", "rows/reservoir_schema_versions"], "the merged entity's databases are gone")
    }
}

/// A read transaction kept for reuse remembers the row database it read last; a database
/// deleted meanwhile (its handle's slot free for LMDB to give another database) must not be
/// read through that memory.
@Suite("LMDB: point reads after a deleted database")
struct KeptReadAfterDeletionTests {
    @Test func aPointReadAfterAnEntitysDatabasesWereDeletedFindsNothingOfAnotherEntity() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:" + dir.path + "/env")
        defer { store.close() }
        let backend = store.backend
        let notes = EntityDescription(name: "notes", fields: ["id", "x"], integerIDs: true)
        let other = EntityDescription(name: "other", fields: ["id", "x"], integerIDs: true)
        try backend.write { tx in try tx.put(notes, id: .integer(1), row: Row([("id", .integer(1)), ("x", .text("a note"))])) }
        var seen: Row?
        // Point reads of `notes`: the kept read transactions remember its row database.
        for _ in 0..<3 {
            #expect(try backend.withRow("notes", id: .integer(1)) { seen = $0 })
        }
        #expect(seen?.value("x") == .text("a note"))
        // Empty `notes` and delete its databases, then give another entity a database (LMDB
        // hands it the freed slot).
        try backend.write { tx in
            try tx.delete(notes, id: .integer(1))
            try tx.dropEntity(notes)
        }
        try backend.write { tx in try tx.put(other, id: .integer(1), row: Row([("id", .integer(1)), ("x", .text("not a note"))])) }
        for _ in 0..<3 {
            seen = nil
            let found = try backend.withRow("notes", id: .integer(1)) { seen = $0 }
            #expect(!found, "notes has no rows; read \(String(describing: seen))")
            #expect(try backend.row("notes", id: .integer(1)) == nil)
        }
        #expect(try backend.row("other", id: .integer(1))?.value("x") == .text("not a note"))
        // The entity comes back with a database of its own.
        try backend.write { tx in try tx.put(notes, id: .integer(2), row: Row([("id", .integer(2)), ("x", .text("back"))])) }
        #expect(try backend.withRow("notes", id: .integer(2)) { seen = $0 })
        #expect(seen?.value("x") == .text("back"))
        #expect(try backend.withRow("notes", id: .integer(1)) { _ in } == false)
    }
}
