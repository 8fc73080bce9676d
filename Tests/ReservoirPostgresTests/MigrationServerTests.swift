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

    @Test func aDropIndexStepDropsTheIndexAndAFailedVersionKeepsIt() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { tx in
            for id in 1...3 {
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(Int64(id)), .text("note \(id)"), .integer(Int64(id))]), in: Self.notes)
            }
        }
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
}
