import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// What a migration leaves in the server, as psql sees it: the parts of the schema that the
/// conformance cases cannot see through the SPI.
@Suite("PostgreSQL: what a migration leaves in the server")
struct MigrationServerTests {
    static let notes = EntityDescription(name: "notes", fields: ["id", "title", "priority"], indexes: ["title", "priority"], integerIDs: true)

    /// The indexes on `table` in the store's schema, by name.
    static func indexes(on table: String, _ configuration: String) throws -> [String] {
        let schema = PlainSQLTests.schema(of: configuration)
        return try PSQL.rows("SELECT indexname FROM pg_indexes WHERE schemaname = '\(schema)' AND tablename = '\(table)' ORDER BY indexname",
                             on: try TestServer.url())
    }

    /// Notes 1 to 3, `title` "note N" and `priority` N.
    static func writeNotes(_ store: Store) throws {
        try store.write { tx in
            for id in 1...3 {
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(Int64(id)), .text("note \(id)"), .integer(Int64(id))]), in: Self.notes)
            }
        }
    }

    /// Runs `body` on a fresh store holding notes 1 to 3 at version 1 (`version1`), with its
    /// configuration string.
    static func withNotesAtVersion1(_ body: (_ store: Store, _ configuration: String, _ version1: SchemaVersion) throws -> Void) throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try writeNotes(store)
        let version1 = SchemaVersion(1)
        try store.migrate(Migrations { version1 })
        try body(store, configuration, version1)
    }

    @Test func aDropIndexStepDropsTheIndexAndAFailedVersionKeepsIt() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try Self.writeNotes(store)
        try store.migrate(Migrations { SchemaVersion(1) })
        #expect(try Self.indexes(on: "notes", configuration) == ["notes_pkey", "notes_priority_idx", "notes_title_idx"])

        // A version that fails after dropping the index leaves it in place.
        #expect(throws: ReservoirError.self) {
            try store.migrate(Migrations {
                SchemaVersion(1)
                SchemaVersion(2, .dropIndex(on: "title", in: "notes"), .transform("notes") { _ in throw ReservoirError(.misuse, "deliberate failure") })
            })
        }
        #expect(try Self.indexes(on: "notes", configuration) == ["notes_pkey", "notes_priority_idx", "notes_title_idx"])

        try store.migrate(Migrations {
            SchemaVersion(1)
            SchemaVersion(2, .dropIndex(on: "title", in: "notes"))
        })
        #expect(try Self.indexes(on: "notes", configuration) == ["notes_pkey", "notes_priority_idx"], "the dropped index is gone from the server")
        let byTitle = try Query(entity: EntityDescription(name: "notes", fields: ["id", "title", "priority"], indexes: ["priority"], integerIDs: true),
                                predicate: .compare(column: "title", .equal, .text("note 2")))
        #expect(try store.read { try $0.rows(byTitle) }.map { $0.value("id") } == [.integer(2)], "queries on the field still work")
    }

    /// A rename is `ALTER TABLE … RENAME COLUMN`: psql sees the column and its index under the
    /// new name with the values in place, and a failed version leaves the old name.
    @Test func aRenamedFieldIsARenamedColumnWithItsIndex() throws {
        try Self.withNotesAtVersion1 { store, configuration, version1 in
            let schema = PlainSQLTests.schema(of: configuration)
            let columns = "SELECT column_name FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = 'notes' ORDER BY ordinal_position"
            #expect(throws: ReservoirError.self) {
                try store.migrate(Migrations {
                    version1
                    SchemaVersion(2, .renameField("title", to: "name", in: "notes"), .transform("notes") { _ in throw ReservoirError(.misuse, "deliberate failure") })
                })
            }
            #expect(try PSQL.rows(columns, on: try TestServer.url()) == ["id", "title", "priority"], "a failed version leaves the old name")
            #expect(try Self.indexes(on: "notes", configuration) == ["notes_pkey", "notes_priority_idx", "notes_title_idx"])

            try store.migrate(Migrations {
                version1
                SchemaVersion(2, .renameField("title", to: "name", in: "notes"))
            })
            #expect(try PSQL.rows(columns, on: try TestServer.url()) == ["id", "name", "priority"], "the column renamed in place")
            #expect(try Self.indexes(on: "notes", configuration) == ["notes_name_idx", "notes_pkey", "notes_priority_idx"], "its index renamed with it")
            #expect(try PSQL.rows("SELECT id || ':' || name FROM \"\(schema)\".notes ORDER BY id", on: try TestServer.url()) == ["1:note 1", "2:note 2", "3:note 3"])
            let stored = try store.read { try $0.entities().first { $0.name == "notes" } }
            let byName = try Query(entity: stored ?? Self.notes, predicate: .compare(column: "name", .equal, .text("note 3")))
            #expect(try store.read { try $0.rows(byName) }.map { $0.value("id") } == [.integer(3)], "queries on the new name")
        }
    }

    /// A type change and a computed field reach the server in bulk (staged, one `UPDATE`):
    /// psql then sees ordinary columns of the values' own types, not `bytea`, a failed version
    /// leaves the old type and values, and psql's writes afterwards are still logged.
    @Test func aTypeChangeLeavesAColumnOfTheNewType() throws {
        try Self.withNotesAtVersion1 { store, configuration, version1 in
            let schema = PlainSQLTests.schema(of: configuration)
            let url = try TestServer.url()
            func type(of column: String) throws -> [String] {
                try PSQL.rows("SELECT data_type FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = 'notes' AND column_name = '\(column)'", on: url)
            }
            let values = "SELECT id || ':' || priority FROM \"\(schema)\".notes ORDER BY id"
            #expect(try type(of: "priority") == ["bigint"])
            #expect(throws: ReservoirError.self) {
                try store.migrate(Migrations {
                    version1
                    SchemaVersion(2, .changeType(of: "priority", in: "notes", from: Int.self, to: String.self) { number in
                        guard number != 3 else { throw ReservoirError(.misuse, "deliberate failure") }
                        return "p\(number)"
                    })
                })
            }
            #expect(try type(of: "priority") == ["bigint"], "a failed version leaves the old type")
            #expect(try PSQL.rows(values, on: url) == ["1:1", "2:2", "3:3"], "and the old values")

            try store.migrate(Migrations {
                version1
                SchemaVersion(2,
                              .changeType(of: "priority", in: "notes", from: Int.self, to: String.self) { "p\($0)" },
                              .addField("rank", to: "notes", indexed: true) { row in try row.decode("id", as: Int.self) * 2 })
            })
            #expect(try type(of: "priority") == ["text"], "an ordinary text column, not bytea")
            #expect(try type(of: "rank") == ["bigint"], "the computed field's column has its values' type")
            #expect(try PSQL.rows(values, on: url) == ["1:p1", "2:p2", "3:p3"])
            #expect(try PSQL.rows("SELECT id || ':' || rank FROM \"\(schema)\".notes ORDER BY id", on: url) == ["1:2", "2:4", "3:6"])
            #expect(try Self.indexes(on: "notes", configuration).contains("notes_rank_idx"), "the computed field's index")

            // The change-log trigger still logs psql's writes to the altered table.
            let logged = "SELECT count(*) FROM \"\(schema)\"._reservoir_changes WHERE entity = 'notes'"
            let before = try PSQL.rows(logged, on: url)
            try PSQL.run("INSERT INTO \"\(schema)\".notes (id, title, priority, rank) VALUES (4, 'from psql', 'p4', 8)", on: url)
            #expect(try PSQL.rows(logged, on: url) != before, "psql's insert logged")
            let stored = try #require(try store.read { try $0.entities().first { $0.name == "notes" } })
            let byPriority = try Query(entity: stored, predicate: .compare(column: "priority", .equal, .text("p4")))
            #expect(try store.read { try $0.rows(byPriority) }.map { $0.value("rank") } == [.integer(8)], "the store reads psql's row")
        }
    }
}
