import BenchSupport
import Foundation
import GRDB

/// GRDB 7.10.0's `DatabaseMigrator` on a `DatabaseQueue` (WAL, `synchronous = NORMAL`, as the
/// other SQLite sides): migration "v1" creates and fills the table at seeding; "v2" is the
/// migration, in GRDB's own terms (`alter(table:)` rename, an `UPDATE` for the type change,
/// `create(index:)`). The migrator runs each migration in its own transaction.
enum GRDBSide {
    static func path(_ place: Place) -> String { place.directory + "/grdb.sqlite" }

    static func queue(_ place: Place) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        return try DatabaseQueue(path: path(place), configuration: configuration)
    }

    static func migrator(records: Int, through version: String) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: "CREATE TABLE bench_notes(id INTEGER PRIMARY KEY, title, priority)")
            let insert = try db.makeStatement(sql: "INSERT INTO bench_notes(id, title, priority) VALUES(?, ?, ?)")
            for id in 0..<records {
                try insert.execute(arguments: [id, Note.title(id), Note.priority(id)])
            }
        }
        guard version == "v2" else { return migrator }
        migrator.registerMigration("v2") { db in
            try db.alter(table: "bench_notes") { table in table.rename(column: "title", to: "name") }
            try db.execute(sql: "UPDATE bench_notes SET priority = CAST(priority AS TEXT)")
            try db.create(index: "bench_notes_name", on: "bench_notes", columns: ["name"])
        }
        return migrator
    }

    static let side = Side(
        name: "grdb-sqlite", engine: "sqlite", label: "GRDB 7.10.0 DatabaseMigrator",
        seed: { place, records in try migrator(records: records, through: "v1").migrate(try queue(place)) },
        migrate: { place in try migrator(records: 0, through: "v2").migrate(try queue(place)) },
        verify: { place, records in
            let queue = try queue(place)
            try queue.read { db in
                guard try migrator(records: 0, through: "v2").appliedIdentifiers(db).contains("v2"),
                      try db.indexes(on: "bench_notes").contains(where: { $0.name == "bench_notes_name" })
                else { throw BenchError("grdb: v2 not applied") }
                var count = 0
                let rows = try Row.fetchCursor(db, sql: "SELECT id, name, priority FROM bench_notes ORDER BY id")
                while let row = try rows.next() {
                    let id: Int = row["id"]
                    let name: String = row["name"]
                    guard name == Note.title(id), row["priority"] as DatabaseValue == Note.migratedPriority(id).databaseValue else {
                        throw BenchError("grdb: record \(id) is not migrated")
                    }
                    count += 1
                }
                guard count == records else { throw BenchError("grdb: \(count) records, expected \(records)") }
            }
        })
}
