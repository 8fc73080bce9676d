import BenchSupport
import Foundation
import Reservoir
import ReservoirLMDB
import ReservoirPostgres
import ReservoirSQLite

/// Reservoir's side on one engine: the store seeded at version 1, then opened with
/// `Store.open(url, migrations:)` holding version 2.
enum ReservoirSide {
    static let registry = BackendRegistry([.sqlite, .lmdb, .postgres])
    static let entity = EntityDescription(name: "bench_notes", fields: ["id", "title", "priority"], integerIDs: true)

    static let version1 = SchemaVersion(1)
    static let migrations = Migrations {
        version1
        SchemaVersion(2,
            .renameField("title", to: "name", in: "bench_notes"),
            .changeType(of: "priority", in: "bench_notes", from: Int.self, to: String.self) { String($0) },
            .addIndex(on: "name", in: "bench_notes"))
    }

    static func side(engine: String, label: String) -> Side {
        Side(name: "reservoir-\(engine)", engine: engine, label: label,
             seed: { place, records in try seed(place.configuration(engine), records: records) },
             migrate: { place in try migrate(place.configuration(engine)) },
             verify: { place, records in try verify(place.configuration(engine), records: records) })
    }

    /// `Store.open(url, migrations:)`; BENCH_PROGRESS=1 prints every 10,000th progress report
    /// with its time, to see where a migration spends it.
    static func migrate(_ configuration: String) throws {
        let start = wallTime()
        var progress: (@Sendable (MigrationProgress) -> Void)?
        if ProcessInfo.processInfo.environment["BENCH_PROGRESS"] != nil {
            progress = { report in
                guard report.recordsDone % 10_000 == 0 || report.recordsDone == report.recordsTotal else { return }
                FileHandle.standardError.write(Data("\(String(format: "%.2f", wallTime() - start)) s: \(report)\n".utf8))
            }
        }
        let store = try Store.open(configuration, registry: registry, migrations: migrations, progress: progress)
        store.close()
    }

    /// The records at version 1, written 50,000 a transaction.
    static func seed(_ configuration: String, records: Int) throws {
        let store = try Store.open(configuration, registry: registry, migrations: Migrations { version1 })
        defer { store.close() }
        var next = 0
        while next < records {
            let end = min(records, next + 50_000)
            try store.write { tx in
                for id in next..<end {
                    let row = Row(columns: ["id", "title", "priority"],
                                  values: [.integer(Int64(id)), .text(Note.title(id)), .integer(Int64(Note.priority(id)))])
                    _ = try tx.putRow(row, in: entity)
                }
            }
            next = end
        }
    }

    static func verify(_ configuration: String, records: Int) throws {
        let store = try Store.open(configuration, registry: registry)
        defer { store.close() }
        guard try store.schemaVersion() == 2 else { throw BenchError("\(configuration): not at version 2") }
        try store.read { snapshot in
            guard let stored = try snapshot.entities().first(where: { $0.name == "bench_notes" }) else {
                throw BenchError("\(configuration): no bench_notes")
            }
            guard stored.indexes.contains("name"), !stored.fields.contains("title") else {
                throw BenchError("\(configuration): the description is \(stored)")
            }
            let rows = try snapshot.rows(Query(entity: stored))
            guard rows.count == records else { throw BenchError("\(configuration): \(rows.count) records, expected \(records)") }
            for row in rows {
                guard case let .integer(id) = row.value("id"),
                      row.value("name") == .text(Note.title(Int(id))),
                      row.value("priority") == .text(Note.migratedPriority(Int(id))),
                      row["title"] == nil
                else { throw BenchError("\(configuration): record \(row) is not migrated") }
            }
        }
    }
}
