import Foundation
import Reservoir
import ReservoirConformance
import Testing

/// A type change on LMDB converts each row where it is stored, in one walk of the row database
/// (`LMDBTransaction.convertColumn`): values, the column's index, progress, and a failure that
/// leaves every row as it was.
@Suite("LMDB: a type change converts rows in place")
struct MigrationConvertTests {
    static let notes = EntityDescription(name: "notes", fields: ["id", "title", "priority"], indexes: ["priority"], integerIDs: true)

    static func priorities(_ store: Store) throws -> [Value] {
        try store.read { snapshot in
            try snapshot.rows(Query(entity: Self.notes, sort: [SortTerm(column: "id")])).map { $0.value("priority") }
        }
    }

    @Test func aTypeChangeConvertsEveryRowIndexAndAllOrNothing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:" + dir.path + "/env")
        defer { store.close() }
        try store.write { tx in
            for id in 1...2_500 {
                let priority: Value = id == 7 ? .null : .integer(Int64(id % 10))
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(Int64(id)), .text("note \(id)"), priority]), in: Self.notes)
            }
        }
        let version1 = SchemaVersion(1)
        try store.migrate(Migrations { version1 })
        let before = try Self.priorities(store)

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
        #expect(try Self.priorities(store) == before, "nothing of the failed version stays")

        let reports = Locked<[MigrationProgress]>([])
        try store.migrate(Migrations {
            version1
            SchemaVersion(2, .changeType(of: "priority", in: "notes", from: Int?.self, to: String.self) { (old: Int?) in old.map { "p\($0)" } ?? "none" })
        }, progress: { report in reports.withLock { $0.append(report) } })
        let after = try Self.priorities(store)
        #expect(after.count == 2_500)
        #expect(after[5] == .text("p6") && after[6] == .text("none") && after[9] == .text("p0"))
        #expect(after.allSatisfy { if case .text = $0 { true } else { false } })
        let done = reports.withLock { $0 }.filter { $0.version == 2 }.map(\.recordsDone)
        #expect(done.first == 0 && done.last == 2_500 && done == done.sorted() && done.count > 2, "progress \(done)")
        // The index holds the new values only: a query the index answers finds them, and none of the old.
        let found = try store.read { snapshot in
            (try snapshot.rows(Query(entity: Self.notes, predicate: .compare(column: "priority", .equal, .text("p6")))).count,
             try snapshot.rows(Query(entity: Self.notes, predicate: .compare(column: "priority", .equal, .integer(6)))).count,
             try snapshot.rows(Query(entity: Self.notes, predicate: .compare(column: "priority", .equal, .text("none")))).map { $0.value("id") })
        }
        #expect(found.0 == 250 && found.1 == 0 && found.2 == [.integer(7)])
        // The store writes on as before, under the converted rows' shape.
        try store.write { tx in _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(2_501), .text("later"), .text("p1")]), in: Self.notes) }
        #expect(try Self.priorities(store).last == .text("p1"))
    }

    /// A type change after a rename in the same version reads the rows through the new name and
    /// writes them in a layout at or above the rename, so they keep the new name.
    @Test func aTypeChangeAfterARenameKeepsTheNewName() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:" + dir.path + "/env")
        defer { store.close() }
        try store.write { tx in
            for id in 1...1_500 {
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(Int64(id)), .text("note \(id)"), .integer(Int64(id % 4))]), in: Self.notes)
            }
        }
        try store.migrate(Migrations {
            SchemaVersion(1)
            SchemaVersion(2, .renameField("title", to: "name", in: "notes"),
                          .changeType(of: "priority", in: "notes", from: Int.self, to: String.self) { "p\($0)" })
        })
        let rows = try store.read { snapshot -> [Row] in
            guard let stored = try snapshot.entities().first(where: { $0.name == "notes" }) else { return [] }
            #expect(stored.fields.contains("name") && !stored.fields.contains("title"))
            return try snapshot.rows(Query(entity: stored, sort: [SortTerm(column: "id")]))
        }
        #expect(rows.count == 1_500)
        #expect(rows.allSatisfy { $0.index(of: "title") == nil })
        #expect(rows[41].value("name") == .text("note 42") && rows[41].value("priority") == .text("p2"))
    }
}
