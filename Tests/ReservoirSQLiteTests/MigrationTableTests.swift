import Foundation
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// What a migration leaves in the file, as another SQLite client sees it: the parts of the
/// schema that the conformance cases cannot see through the SPI.
@Suite struct MigrationTableTests {
    static let notes = EntityDescription(name: "notes", fields: ["id", "title", "priority"], indexes: ["title"], integerIDs: true)

    /// A rename is `ALTER TABLE … RENAME COLUMN`: the table keeps its rows where they are (same
    /// rowids, same values) under the new column name, the index is on the new name, the
    /// change-log triggers keep logging, and a failed version leaves the old name.
    @Test func aRenamedFieldIsARenamedColumnWithItsIndex() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { tx in
            for id in 1...3 {
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(Int64(id)), .text("note \(id)"), .integer(Int64(id))]), in: Self.notes)
            }
        }
        let version1 = SchemaVersion(1)
        try store.migrate(Migrations { version1 })
        let raw = try RawConnection(directory.databasePath)
        let columns = "SELECT name FROM pragma_table_info('notes') ORDER BY cid"
        let indexes = "SELECT name || ':' || (SELECT group_concat(name) FROM pragma_index_info(il.name)) FROM pragma_index_list('notes') AS il ORDER BY name"
        #expect(try raw.query(columns) == [["id"], ["title"], ["priority"]])
        #expect(try raw.query(indexes) == [["_reservoir_index_notes_title:title"]])

        #expect(throws: ReservoirError.self) {
            try store.migrate(Migrations {
                version1
                SchemaVersion(2, .renameField("title", to: "name", in: "notes"), .transform("notes") { _ in throw ReservoirError(.misuse, "deliberate failure") })
            })
        }
        #expect(try raw.query(columns) == [["id"], ["title"], ["priority"]], "a failed version leaves the old name")
        #expect(try raw.query(indexes) == [["_reservoir_index_notes_title:title"]])

        let before = try raw.query("SELECT rowid, title, priority FROM notes ORDER BY rowid")
        try store.migrate(Migrations {
            version1
            SchemaVersion(2, .renameField("title", to: "name", in: "notes"))
        })
        #expect(try raw.query(columns) == [["id"], ["name"], ["priority"]], "the column renamed in place, in its position")
        #expect(try raw.query(indexes) == [["_reservoir_index_notes_name:name"]], "the index on the new name, under a name of its own")
        #expect(try raw.query("SELECT rowid, name, priority FROM notes ORDER BY rowid") == before, "rows and values where they were")

        // Another client's write under the new name is logged and reaches the store.
        try raw.execute("UPDATE notes SET name = 'renamed by hand' WHERE id = 2")
        let stored = try store.read { try $0.entities().first { $0.name == "notes" } }
        let row = try store.read { snapshot in try snapshot.rows(Query(entity: stored ?? Self.notes, predicate: .compare(column: "name", .equal, .text("renamed by hand")))) }
        #expect(row.map { $0.value("id") } == [.integer(2)])
    }
}
