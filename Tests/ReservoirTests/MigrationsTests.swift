import Foundation
import Reservoir
import Testing

/// The migrations API on the memory backend: what the conformance cases do not cover (bad
/// declarations, the builder's forms, progress, the plan's words).
@Suite("Migrations")
struct MigrationsTests {
    private static let notes = EntityDescription(name: "notes", fields: ["id", "title"], integerIDs: true)

    private static func store(records: Int) throws -> Store {
        let store = try Store.open("memory:", registry: BackendRegistry())
        try store.write { tx in
            for id in 0..<records {
                _ = try tx.putRow(Row(columns: ["id", "title"], values: [.integer(Int64(id)), .text("note \(id)")]), in: notes)
            }
        }
        return store
    }

    private static func error(_ body: () throws -> Void) -> ReservoirError? {
        do {
            try body()
            return nil
        } catch {
            return error as? ReservoirError
        }
    }

    @Test(arguments: [[2, 1], [1, 1], [0], [-3]])
    func versionsMustRiseFromOne(_ numbers: [Int]) throws {
        let store = try Self.store(records: 1)
        let migrations = Migrations(numbers.map { SchemaVersion($0) })
        let error = Self.error { try store.migrate(migrations) }
        #expect(error?.code == .invalidSchema, "\(numbers)")
        #expect(error?.message.contains("expected version numbers from 1, each above the one before") == true, "\(String(describing: error))")
        #expect(try store.schemaVersion() == 0)
    }

    @Test(arguments: [
        MigrationStep.renameField("title", to: "has space", in: "notes"),
        .addField("1st", to: "notes", default: 0),
        .renameEntity("notes", to: "reservoir_schema_versions"),
        .transform("") { _ in },
    ])
    func badNamesAreRefusedByName(_ step: MigrationStep) throws {
        let store = try Self.store(records: 1)
        let error = Self.error { try store.migrate(Migrations { SchemaVersion(1, step) }) }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains("version 1, step 1 (\(step))") == true, "\(String(describing: error))")
        #expect(try store.schemaVersion() == 0)
    }

    @Test func additiveIsDecidedFromTheSteps() {
        #expect(SchemaVersion(1, .addField("a", to: "e", default: 1), .addIndex(on: "a", in: "e"), .makeSearchable("a", in: "e")).isAdditive)
        #expect(SchemaVersion(2).isAdditive)
        for step in [MigrationStep.renameField("a", to: "b", in: "e"), .dropField("a", from: "e"), .dropIndex(on: "a", in: "e"),
                     .changeType(of: "a", in: "e", from: Int.self, to: String.self) { "\($0)" }, .transform("e") { _ in },
                     .renameEntity("e", to: "f"), .splitEntity("e", fields: ["a"], into: "f"), .mergeEntity("f", into: "e")] {
            #expect(!SchemaVersion(3, .addField("a", to: "e", default: 1), step).isAdditive, "\(step)")
        }
    }

    @Test func theBuilderTakesConditionsAndLoops() {
        let includeThree = true
        let migrations = Migrations {
            for number in 1...2 { SchemaVersion(number) }
            if includeThree { SchemaVersion(3, .dropField("a", from: "e")) }
        }
        #expect(migrations.versions.map(\.number) == [1, 2, 3])
        #expect(migrations.latest == 3)
        #expect(migrations.versions[2].description == "version 3: dropField \"a\" from e")
    }

    @Test(arguments: [0, 1, 999, 1000, 2500])
    func progressCoversEveryRecordOfEveryStep(_ count: Int) throws {
        let store = try Self.store(records: count)
        let reports = Locked<[MigrationProgress]>([])
        try store.migrate(Migrations {
            SchemaVersion(1, .addField("done", to: "notes", default: false), .renameField("title", to: "name", in: "notes"))
        }, progress: { report in reports.withLock { $0.append(report) } })
        let seen = reports.withLock { $0 }
        if count == 0 {
            #expect(seen.isEmpty, "a step with no records reports nothing")
            return
        }
        for step in 1...2 {
            let ofStep = seen.filter { $0.step == step }
            #expect(ofStep.first?.recordsDone == 0, "step \(step) starts at 0")
            #expect(ofStep.last?.recordsDone == count && ofStep.last?.fractionDone == 1, "step \(step) ends at \(count)")
            #expect(ofStep.allSatisfy { $0.recordsTotal == count && $0.stepCount == 2 && $0.version == 1 && $0.entity == "notes" })
            #expect(ofStep.count == 2 + (count - 1) / 1000, "reports of step \(step) for \(count) records: \(ofStep)")
        }
    }

    /// Rows rewritten by a rename share one renamed column list per row shape: two entities of
    /// one shape renamed differently in one version (and a field renamed back and forth) each
    /// get their own names.
    @Test func renamesOfRowsOfOneShapeStayApart() throws {
        let store = try Self.store(records: 3)
        let tasks = EntityDescription(name: "tasks", fields: ["id", "title"], integerIDs: true)
        try store.write { tx in
            for id in 0..<3 { _ = try tx.putRow(Row(columns: ["id", "title"], values: [.integer(Int64(id)), .text("task \(id)")]), in: tasks) }
        }
        try store.migrate(Migrations {
            SchemaVersion(1,
                .renameField("title", to: "name", in: "notes"),
                .renameField("title", to: "heading", in: "tasks"),
                .renameField("name", to: "title", in: "notes"),
                .renameField("title", to: "label", in: "notes"))
        })
        let rows = try store.read { snapshot -> [String: [Row]] in
            var byEntity: [String: [Row]] = [:]
            for entity in try snapshot.entities() where ["notes", "tasks"].contains(entity.name) {
                byEntity[entity.name] = try snapshot.rows(Query(entity: entity))
            }
            return byEntity
        }
        #expect(rows["notes"]?.map { Set($0.columns) } == Array(repeating: ["id", "label"], count: 3))
        #expect(rows["notes"]?.map { $0.value("label") } == [.text("note 0"), .text("note 1"), .text("note 2")])
        #expect(rows["tasks"]?.map { Set($0.columns) } == Array(repeating: ["id", "heading"], count: 3))
        #expect(rows["tasks"]?.map { $0.value("heading") } == [.text("task 0"), .text("task 1"), .text("task 2")])
    }

    @Test func thePlanSaysWhatWouldRun() throws {
        let store = try Self.store(records: 3)
        let migrations = Migrations {
            SchemaVersion(1, .renameField("title", to: "name", in: "notes"), .addIndex(on: "name", in: "notes"))
        }
        let plan = try store.migrationPlan(migrations)
        #expect(plan.description == """
            schema version 0 → 1:
              version 1 step 1: renameField "title" → "name" in notes (3 records)
              version 1 step 2: addIndex on "name" in notes (3 records)
            """)
        try store.migrate(migrations)
        #expect(try store.migrationPlan(migrations).description == "at schema version 1: nothing to do")
        let fresh = try Self.store(records: 0)
        #expect(try fresh.migrationPlan(migrations).description == "new store: stamped with schema version 1, no step runs")
    }

    @Test func aStepMayNotChangeTheID() throws {
        let store = try Self.store(records: 2)
        let error = Self.error {
            try store.migrate(Migrations { SchemaVersion(1, .transform("notes") { row in row["id"] = .integer(99) }) })
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("record 0: the step changed the record's id to 99") == true, "\(String(describing: error))")
        #expect(try store.read { try $0.rows(Query(entity: Self.notes)) }.map { $0.value("id") } == [.integer(0), .integer(1)])
    }

    @Test func theIDColumnCannotBeRenamedOrDropped() throws {
        let store = try Self.store(records: 1)
        for step in [MigrationStep.renameField("id", to: "key", in: "notes"), .dropField("id", from: "notes")] {
            let error = Self.error { try store.migrate(Migrations { SchemaVersion(1, step) }) }
            #expect(error?.code == .migrationFailed)
            #expect(error?.message.contains("\"id\" is the id column of entity \"notes\"") == true, "\(String(describing: error))")
        }
    }

    @Test func aMigrationCannotRunInsideAWrite() throws {
        let store = try Self.store(records: 1)
        let migrations = Migrations { SchemaVersion(1, .dropField("title", from: "notes")) }
        let error = Self.error {
            try store.write { (_: Transaction) -> Void in
                _ = try store.migrate(migrations)
            }
        }
        #expect(error?.code == .misuse)
    }
}
