import Foundation
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// Integer-id entities live in rowid tables (`id INTEGER PRIMARY KEY`); every other entity
/// in a `WITHOUT ROWID` table. The contract must not notice the difference.
@Suite struct IntegerKeyTests {
    struct Counter: Storable {
        var id: Int64
        var value: Int
        static let schema = Schema<Counter>("counters", fields: [.field(\.value)])
    }

    struct Tag: Storable {
        var id: UUID
        var label: String
        static let schema = Schema<Tag>("tags", fields: [.field(\.label)])
    }

    /// The `CREATE TABLE` statement SQLite keeps for `table`.
    private func tableSQL(_ table: String, _ path: String) throws -> String {
        try RawConnection(path).query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '\(table)'").first?.first??.uppercased() ?? ""
    }

    @Test func integerIDsGetRowidTablesAndOtherIDsWithoutRowid() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { tx in
            try tx.insert(Todo(id: 1, title: "a", done: false, priority: 1, note: nil))
            try tx.insert(Counter(id: 2, value: 3))
            try tx.insert(Measurement(id: "m", value: 1, label: nil))
            try tx.insert(Tag(id: UUID(), label: "t"))
            try tx.putRow(Row([("id", 1), ("x", "raw")]), in: EntityDescription(name: "raw"))
        }
        for table in ["todos", "counters"] {
            let sql = try tableSQL(table, directory.databasePath)
            #expect(sql.contains("INTEGER PRIMARY KEY"), "\(table): \(sql)")
            #expect(!sql.contains("WITHOUT ROWID"), "\(table): \(sql)")
        }
        // Ids whose kind is unknown (rows without Swift types) keep the untyped key.
        for table in ["measurements", "tags", "raw"] {
            let sql = try tableSQL(table, directory.databasePath)
            #expect(sql.contains("WITHOUT ROWID"), "\(table): \(sql)")
            #expect(!sql.contains("INTEGER"), "\(table): \(sql)")
        }
        #expect(try store.fetch(Counter.self) == [Counter(id: 2, value: 3)])
    }

    @Test func duplicateInsertIntoARowidTableIsDuplicateIDAndTheWriteGoesOn() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        let first = Todo(id: 1, title: "first", done: false, priority: 1, note: nil)
        try store.write { try $0.insert(first) }
        let error = #expect(throws: ReservoirError.self) {
            try store.write { try $0.insert(Todo(id: 1, title: "again", done: false, priority: 1, note: nil)) }
        }
        #expect(error?.code == .duplicateID)
        try store.write { tx in
            // ON CONFLICT ABORT undoes the one statement; the transaction goes on.
            #expect(throws: ReservoirError.self) { try tx.insert(first) }
            try tx.insert(Todo(id: 2, title: "second", done: false, priority: 1, note: nil))
        }
        #expect(try store.fetch(Todo.self).map(\.id) == [1, 2])
        #expect(try store.fetch(Todo.self).first?.title == "first")
    }

    @Test(arguments: [Value.text("abc"), .text("1"), .text("3"), .real(3.0), .real(2.5), .blob(Data([1]))])
    func aNonIntegerIDIsAClearErrorAndNothingCommittedChanges(_ id: Value) throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        let todo = Todo(id: 1, title: "kept", done: false, priority: 1, note: nil)
        try store.write { try $0.insert(todo) }
        let row = Row([("id", id), ("title", "bad"), ("done", 0), ("priority", 1), ("note", nil)])
        // Whether the description says so (Swift types) or not (a tool copying rows), the table decides.
        for entity in [Todo.schema.entity, EntityDescription(name: "todos")] {
            do {
                try store.write { tx in
                    try tx.insert(Todo(id: 2, title: "rolled back", done: false, priority: 1, note: nil))
                    try tx.putRow(row, in: entity)
                }
                Issue.record("id \(id) was accepted by the integer-id entity")
            } catch let error as ReservoirError {
                #expect(error.code == .invalidSchema, "\(error)")
                #expect(error.nativeCode == nil, "\(error)")
                #expect(error.message.contains("\"todos\""), "\(error)")
                #expect(error.message.contains("with id \(id)"), "\(error)")
                #expect(error.message.contains("integer ids"), "\(error)")
            }
        }
        #expect(try store.fetch(Todo.self) == [todo])
        #expect(try store.read { try $0.entities() }.first?.integerIDs == true)
        // The store still writes.
        try store.write { try $0.insert(Todo(id: 3, title: "after", done: false, priority: 1, note: nil)) }
        #expect(try store.fetch(Todo.self).map(\.id) == [1, 3])
        #expect(try RawConnection(directory.databasePath).query("PRAGMA integrity_check") == [["ok"]])
    }

    /// The rowid's integer affinity would make text `'1'` equal `1`; the contract says text
    /// never equals a number. Every comparison must agree with the reference evaluator.
    @Test func textComparedWithAnIntegerIDFollowsTheContractOrder() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        let todos = (1...5).map { Todo(id: $0, title: "t\($0)", done: false, priority: $0, note: nil) }
        try store.write { tx in for todo in todos { try tx.insert(todo) } }
        #expect(try tableSQL("todos", directory.databasePath).contains("INTEGER PRIMARY KEY"))
        let entity = Todo.schema.entity
        let stored = try store.read { try $0.rows(Query(entity: entity)) }
        let operands: [Value] = [.text("3"), .text("3.0"), .text(" 3"), .text("a"), .text(""), .integer(3), .real(3.0), .real(2.5), .blob(Data([3])), .null]
        var predicates: [RowPredicate] = []
        for operand in operands {
            for op in ComparisonOperator.allCases { predicates.append(.compare(column: "id", op, operand)) }
            predicates.append(.isIn(column: "id", [operand]))
            predicates.append(.isIn(column: "id", [operand, .integer(4)]))
            predicates.append(.not(.isIn(column: "id", [operand, .integer(4)])))
        }
        for predicate in predicates {
            let query = try Query(entity: entity, predicate: predicate)
            let expected = QueryEvaluator.evaluate(query, over: stored).map { $0.value("id") }
            let found = try store.read { try $0.rows(query) }.map { $0.value("id") }
            #expect(found == expected, "\(predicate)")
            #expect(try store.read { try $0.count(query) } == expected.count, "\(predicate)")
        }
        // By id: text never finds the integer row, in a read or inside a write.
        #expect(try store.read { try $0.rows(Query(entity: entity, predicate: .compare(column: "id", .equal, .text("3")))) }.isEmpty)
        try store.write { tx throws in
            #expect(try tx.putRow(Row([("id", 3), ("title", "t3"), ("done", 0), ("priority", 3), ("note", nil)]), in: entity) == nil)
            #expect(try tx.get(Todo.self, id: 3)?.title == "t3")
        }
    }

    @Test func entitiesReturnTheFlagAsWrittenAcrossReopening() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        do {
            let store = try openStore(directory.databasePath)
            try store.write { tx in
                try tx.insert(Todo(id: 1, title: "a", done: false, priority: 1, note: nil))
                try tx.insert(Measurement(id: "m", value: 1, label: nil))
            }
            let entities = try store.read { try $0.entities() }
            #expect(entities == [Measurement.schema.entity, Todo.schema.entity])
            store.close()
        }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        let entities = try store.read { try $0.entities() }
        #expect(entities == [Measurement.schema.entity, Todo.schema.entity])
        #expect(entities.map(\.integerIDs) == [false, true])
    }

    /// A table made before integer keys (or by a tool without Swift types) stays as it is.
    @Test func anOldWithoutRowidTableForIntegerIDsKeepsWorking() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let old = EntityDescription(name: "todos", fields: Todo.schema.entity.fields, indexes: Todo.schema.entity.indexes)
        do {
            let store = try openStore(directory.databasePath)
            try store.write { tx in
                try tx.putRow(Row([("id", 1), ("title", "old"), ("done", 0), ("priority", 1), ("note", nil)]), in: old)
            }
            store.close()
            // As a file from before `integer_ids` existed.
            try RawConnection(directory.databasePath).execute("ALTER TABLE _reservoir_entities DROP COLUMN integer_ids")
        }
        #expect(try tableSQL("todos", directory.databasePath).contains("WITHOUT ROWID"))
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        #expect(try store.read { try $0.entities() } == [old])
        try store.write { tx in
            try tx.insert(Todo(id: 2, title: "new", done: true, priority: 2, note: "n"))
            try tx.update(Todo(id: 1, title: "updated", done: false, priority: 1, note: nil))
            #expect(throws: ReservoirError.self) { try tx.insert(Todo(id: 2, title: "dup", done: true, priority: 2, note: nil)) }
        }
        #expect(try store.fetch(Todo.self).map(\.title) == ["updated", "new"])
        #expect(try store.fetch(FetchRequest<Todo>(where: \.priority >= 2)).map(\.id) == [2])
        #expect(try store.read { try $0.entities() } == [Todo.schema.entity])
        #expect(try tableSQL("todos", directory.databasePath).contains("WITHOUT ROWID"))
        try store.write { tx throws in #expect(try tx.delete(Todo.self, id: 1)) }
        #expect(try store.fetch(Todo.self).map(\.id) == [2])
        // The untyped key still takes what it always took.
        try store.write { tx in
            try tx.putRow(Row([("id", "text"), ("title", "t"), ("done", 0), ("priority", 0), ("note", nil)]), in: old)
        }
        #expect(try store.read { try $0.count(Query(entity: old)) } == 2)
    }
}
