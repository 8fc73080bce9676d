import Foundation
import Reservoir
import ReservoirConformance
import Testing
@testable import ReservoirLMDB

/// A migration's version is a rerunnable write (`LMDBBackend.rerunnableWrite`): it keeps no row
/// to replay, so when it fills the map the backend aborts it, grows the map and runs the whole
/// version again. Here the version makes every row far larger, so it fills even the map grown
/// ahead of it (four times the pages in use), mid-migration.
@Suite("LMDB: a migration that fills the map")
struct MigrationMapGrowthTests {
    static let notes = EntityDescription(name: "notes", fields: ["id", "title", "priority"], indexes: ["priority"], integerIDs: true)

    /// What each record's new `body` field holds: about 1,500 bytes, where a seeded row has about
    /// 20, so the version needs far more than the room made ahead of it.
    static func body(_ name: String) -> String { String(repeating: "b", count: 1_500) + name }

    /// A store in a 64 KiB map holding `count` notes at version 1.
    static func seeded(_ path: String, count: Int, options: String = "") throws -> Store {
        let store = try openStore("lmdb:\(path)?mapsize=64KiB&durability=none" + options)
        do {
            try store.write { tx in
                for i in 0..<count {
                    _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(Int64(i)), .text("note \(i)"), .integer(Int64(i % 7))]), in: notes)
                }
            }
            try store.migrate(Migrations { SchemaVersion(1) })
        } catch {
            store.close()
            throw error
        }
        return store
    }

    /// Runs `body` on a store seeded as ``seeded(_:count:)`` in a directory of its own.
    static func withSeeded(count: Int, _ body: (Store, LMDBBackend) throws -> Void) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try seeded(dir.path + "/env", count: count)
        defer { store.close() }
        try body(store, try #require(store.backend as? LMDBBackend))
    }

    static func rows(_ store: Store) throws -> [Row] {
        try store.read { snapshot in
            guard let stored = try snapshot.entities().first(where: { $0.name == "notes" }) else { return [] }
            return try snapshot.rows(Query(entity: stored, sort: [SortTerm(column: "id")]))
        }
    }

    /// The entries of `entity`'s index on `column`, read through the index database.
    static func indexEntries(_ backend: LMDBBackend, _ column: String) throws -> Int {
        try backend.read { tx in
            let t = try #require(tx as? LMDBTransaction)
            guard let index = try t.indexDatabase("notes", column) else { return 0 }
            return try t.entryCount(index)
        }
    }

    /// What a rerunnable write holds: no operation (so no row) to replay, where an ordinary write
    /// keeps each one.
    @Test func aRerunnableWriteKeepsNoOperations() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env", options: LMDBOptions(try StoreConfiguration("lmdb:\(dir.path)/env?durability=none")))
        defer { backend.close() }
        func putAll(_ tx: any WriteTransaction, from start: Int) throws -> Int {
            for i in start..<(start + 100) {
                try tx.put(Self.notes, id: .integer(Int64(i)), row: Row(columns: ["id", "title", "priority"], values: [.integer(Int64(i)), .text("note \(i)"), .integer(Int64(i % 7))]))
            }
            return try #require(tx as? LMDBTransaction).replay.operations.count
        }
        #expect(try backend.write { try putAll($0, from: 0) } == 100)
        #expect(try backend.rerunnableWrite { try putAll($0, from: 100) } == 0)
        #expect(try backend.read { try $0.count(Query(entity: Self.notes)) } == 200)
        // An entity rename's rows, moved one by one: two descriptions kept, not two per record.
        var tasks = Self.notes
        tasks.name = "tasks"
        let kept = try backend.rerunnableWrite { tx in
            for i in 0..<200 {
                let id = Value.integer(Int64(i))
                try tx.put(tasks, id: id, row: try #require(try tx.row("notes", id: id)))
                try tx.delete(Self.notes, id: id)
            }
            return try #require(tx as? LMDBTransaction).replay.entities.count
        }
        #expect(kept == 2)
        #expect(try backend.read { try $0.count(Query(entity: tasks)) } == 200)
    }

    @Test(arguments: [2_000, 3_000])
    func aVersionThatFillsTheMapRunsAgainAndCommitsOnce(count: Int) throws {
        try Self.withSeeded(count: count) { store, backend in
            let sequenceBefore = try backend.read { try $0.lastSequence() }
            let grownBefore = backend.environment.resizes.grown
            let mapBefore = backend.mapSize
            let computed = Locked(0)
            let reports = Locked([MigrationProgress]())
            let migrations = Migrations {
                SchemaVersion(1)
                SchemaVersion(2,
                              .renameField("title", to: "name", in: "notes"),
                              .changeType(of: "priority", in: "notes", from: Int.self, to: String.self) { String($0) },
                              .addField("body", to: "notes") { row in
                                  computed.withLock { $0 += 1 }
                                  return Self.body(try row.decode("name", as: String.self))
                              },
                              .addIndex(on: "name", in: "notes"))
            }
            #expect(try store.migrate(migrations) { progress in reports.withLock { $0.append(progress) } } == [2], "count \(count)")

            // The map filled and grew while the version ran, and the version ran again from its start.
            #expect(backend.environment.resizes.grown > grownBefore, "count \(count): the map grew from \(mapBefore) to \(backend.mapSize)")
            #expect(computed.withLock { $0 } > count, "count \(count): the computed field's closure ran again")
            let starts = reports.withLock { $0.filter { $0.step == 1 && $0.recordsDone == 0 }.count }
            #expect(starts >= 2, "count \(count): the progress of the first step started again")
            let last = try #require(reports.withLock { $0.last })
            #expect(last.version == 2 && last.step == 4 && last.stepCount == 4 && last.recordsDone == count && last.recordsTotal == count, "\(last)")

            // Exactly the migrated records, once each.
            #expect(try store.schemaVersion() == 2)
            let rows = try Self.rows(store)
            #expect(rows.count == count, "count \(count)")
            for (i, row) in rows.enumerated() {
                let expected: [String: Value] = ["id": .integer(Int64(i)), "name": .text("note \(i)"), "priority": .text(String(i % 7)), "body": .text(Self.body("note \(i)"))]
                guard Set(row.columns) == Set(expected.keys), expected.allSatisfy({ row.value($0.key) == $0.value }) else {
                    Issue.record("count \(count): record \(i) is \(row)")
                    break
                }
            }
            let stored = try #require(try store.read { try $0.entities().first { $0.name == "notes" } })
            #expect(stored.fields == ["id", "name", "priority", "body"])
            #expect(Set(stored.indexes) == ["priority", "name"])
            // The indexes hold one entry per record and answer queries.
            #expect(try Self.indexEntries(backend, "name") == count, "count \(count)")
            #expect(try Self.indexEntries(backend, "priority") == count, "count \(count)")
            #expect(try Self.indexEntries(backend, "title") == 0, "count \(count)")
            let named = try store.read { try $0.rows(Query(entity: stored, predicate: .compare(column: "name", .equal, .text("note \(count / 2)")))) }
            #expect(named.map { $0.value("id") } == [.integer(Int64(count / 2))])
            let threes = try store.read { try $0.rows(Query(entity: stored, predicate: .compare(column: "priority", .equal, .text("3")))) }
            let expectedThrees: [Value] = (0..<count).filter { $0 % 7 == 3 }.map { Value.integer(Int64($0)) }
            #expect(threes.map { $0.value("id") } == expectedThrees)

            // One change set, the schema change's.
            let log = try backend.read { try $0.changeLog(after: sequenceBefore, limit: 100) }
            #expect(Set(log.map(\.sequence)) == [sequenceBefore + 1], "count \(count)")
            #expect(log.allSatisfy { $0.entity == "reservoir_schema_versions" }, "count \(count)")
        }
    }

    /// A version that fills the map after an entity rename deleted the old entity's databases
    /// (`mdb_drop`, which closes their handles in the whole process): the rerun begins where they
    /// exist again, finds them by name and moves the rows once more.
    @Test func aVersionThatFillsTheMapAfterDroppingAnEntityRunsAgain() throws {
        let count = 2_000
        try Self.withSeeded(count: count) { store, _ in
            let computed = Locked(0)
            try store.migrate(Migrations {
                SchemaVersion(1)
                SchemaVersion(2,
                              .renameEntity("notes", to: "tasks"),
                              .addField("body", to: "tasks") { row in
                                  computed.withLock { $0 += 1 }
                                  return Self.body(try row.decode("title", as: String.self))
                              })
            })
            #expect(computed.withLock { $0 } > count, "the version ran again")
            #expect(try store.schemaVersion() == 2)
            let tasks = try #require(try store.read { try $0.entities().first { $0.name == "tasks" } })
            #expect(try store.read { try $0.entities().map(\.name).sorted() } == ["reservoir_schema_versions", "tasks"])
            let rows = try store.read { try $0.rows(Query(entity: tasks, sort: [SortTerm(column: "id")])) }
            let bodies: [Value] = (0..<count).map { Value.text(Self.body("note \($0)")) }
            #expect(rows.map { $0.value("body") } == bodies)
            let byPriority = try store.read { try $0.rows(Query(entity: tasks, predicate: .compare(column: "priority", .equal, .integer(3)))) }
            #expect(byPriority.count == (0..<count).filter { $0 % 7 == 3 }.count)
        }
    }

    /// A version that needs more than `maxmapsize` fails with `.full` naming the option, after
    /// running again as the map grew up to it, and leaves the store at the version before.
    @Test func aVersionLargerThanTheLargestMapIsAFullErrorAndChangesNothing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let count = 2_000
        let store = try Self.seeded(dir.path + "/env", count: count, options: "&maxmapsize=1MiB")
        defer { store.close() }
        let backend = try #require(store.backend as? LMDBBackend)
        let before = try Self.rows(store)
        #expect {
            try store.migrate(Migrations {
                SchemaVersion(1)
                SchemaVersion(2, .addField("body", to: "notes") { row in Self.body(try row.decode("title", as: String.self)) })
            })
        } throws: { error in
            (error as? ReservoirError)?.code == .full && "\(error)".contains("maxmapsize")
        }
        #expect(backend.mapSize == 1 << 20)
        #expect(try store.schemaVersion() == 1)
        #expect(try Self.rows(store) == before)
        try store.write { tx in
            _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(-1), .text("still writable"), .integer(0)]), in: Self.notes)
        }
        #expect(try Self.rows(store).count == count + 1)
    }

    /// A version that fails after the map filled and grew rolls back like any failed version.
    @Test func aVersionThatFailsAfterTheMapFilledLeavesTheStoreAsItWas() throws {
        let count = 2_000
        try Self.withSeeded(count: count) { store, backend in
            let before = try Self.rows(store)
            let computed = Locked(0)
            let failing = Migrations {
                SchemaVersion(1)
                SchemaVersion(2,
                              .addField("body", to: "notes") { row in
                                  computed.withLock { $0 += 1 }
                                  return Self.body(try row.decode("title", as: String.self))
                              },
                              .transform("notes") { row in
                                  if row.value("id") == .integer(Int64(count - 1)) { throw ReservoirError(.misuse, "deliberate failure") }
                              })
            }
            #expect {
                try store.migrate(failing)
            } throws: { error in
                (error as? ReservoirError)?.code == .migrationFailed && "\(error)".contains("record \(count - 1)")
            }
            #expect(computed.withLock { $0 } > count, "the map filled and the version ran again before it failed")
            #expect(try store.schemaVersion() == 1)
            #expect(try Self.rows(store) == before)
            #expect(try Self.indexEntries(backend, "priority") == count)
            // The store goes on: the same version without the failure applies.
            try store.migrate(Migrations {
                SchemaVersion(1)
                SchemaVersion(2, .addField("body", to: "notes") { row in Self.body(try row.decode("title", as: String.self)) })
            })
            let bodies: [Value] = (0..<count).map { Value.text(Self.body("note \($0)")) }
            #expect(try Self.rows(store).map { $0.value("body") } == bodies)
        }
    }
}
