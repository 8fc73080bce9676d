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

    /// A type change is one `UPDATE` calling the conversion through an SQL function: another
    /// client sees the converted values (a null converted too), progress runs from 0 to every
    /// row, and a conversion that throws part-way leaves every row as it was, naming the record.
    @Test func aTypeChangeConvertsInOneUpdateAndFailsWhole() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { tx in
            for id in 1...2_500 {
                let priority: Value = id == 7 ? .null : .integer(Int64(id % 10))
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(Int64(id)), .text("note \(id)"), priority]), in: Self.notes)
            }
        }
        let version1 = SchemaVersion(1)
        try store.migrate(Migrations { version1 })
        let raw = try RawConnection(directory.databasePath)
        let before = try raw.query("SELECT id, title, priority, typeof(priority) FROM notes ORDER BY id")

        #expect {
            try store.migrate(Migrations {
                version1
                SchemaVersion(2, .changeType(of: "priority", in: "notes", from: Int?.self, to: String.self) { (old: Int?) in
                    if old == 3 { throw ReservoirError(.invalidSchema, "deliberate failure") }
                    return old.map { "p\($0)" } ?? "none"
                })
            })
        } throws: { error in
            let message = (error as? ReservoirError)?.message ?? ""
            return message.contains("version 2") && message.contains("step 1") && message.contains("record 3") && message.contains("deliberate failure")
        }
        #expect(try raw.query("SELECT id, title, priority, typeof(priority) FROM notes ORDER BY id") == before, "nothing of the failed version stays")

        let reports = Locked<[MigrationProgress]>([])
        try store.migrate(Migrations {
            version1
            SchemaVersion(2, .changeType(of: "priority", in: "notes", from: Int?.self, to: String.self) { (old: Int?) in old.map { "p\($0)" } ?? "none" })
        }, progress: { report in reports.withLock { $0.append(report) } })
        #expect(try raw.query("SELECT priority, typeof(priority) FROM notes WHERE id IN (6, 7, 10) ORDER BY id") == [["p6", "text"], ["none", "text"], ["p0", "text"]])
        #expect(try raw.query("SELECT count(*) FROM notes WHERE typeof(priority) <> 'text'") == [["0"]])
        let done = reports.withLock { $0 }.filter { $0.version == 2 }.map(\.recordsDone)
        #expect(done.first == 0 && done.last == 2_500 && done == done.sorted() && done.count > 2, "progress \(done)")
        // The store reads the converted values, and writes on as before.
        let rows = try store.read { try $0.rows(Query(entity: Self.notes, predicate: .compare(column: "id", .equal, .integer(10)))) }
        #expect(rows.map { $0.value("priority") } == [.text("p0")])
        try store.write { tx in _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(2_501), .text("later"), .text("p1")]), in: Self.notes) }
    }
}
