import Foundation
import Reservoir

/// The entity the migration cases start from, written as raw rows (the app's Swift type may
/// no longer match it): `title` indexed, `priority` stored as text.
private let notes = EntityDescription(name: "conformance_notes", fields: ["id", "title", "priority"], indexes: ["title"], integerIDs: true)

private func note(_ id: Int64, _ title: String, _ priority: String) -> Row {
    Row(columns: ["id", "title", "priority"], values: [.integer(id), .text(title), .text(priority)])
}

private let startingNotes = [note(1, "Buy milk", "2"), note(2, "Call Bob", "10"), note(3, "Write report", "1")]

/// The notes' rows by id, read fresh.
private func rows(_ store: Store, _ entity: String = "conformance_notes") throws -> [Int64: Row] {
    try store.read { snapshot in
        guard let stored = try snapshot.entities().first(where: { $0.name == entity }) else { return [:] }
        var byID: [Int64: Row] = [:]
        for row in try snapshot.rows(Query(entity: stored)) { byID[row.value("id").integerValue] = row }
        return byID
    }
}

private func description(_ store: Store, _ entity: String = "conformance_notes") throws -> EntityDescription? {
    try store.read { try $0.entities().first { $0.name == entity } }
}

private extension Value {
    var integerValue: Int64 {
        if case let .integer(value) = self { return value }
        return -1
    }
}

/// A store holding the starting notes, at schema version 1 (the notes' first shape).
private func startingStore(_ context: ConformanceContext) throws -> Store {
    try context.store.putRows(startingNotes, in: notes)
    try context.store.migrate(Migrations { SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes")) })
    return context.store
}

/// Version 1, then `steps` as version 2.
private func upToVersion2(_ steps: MigrationStep...) -> Migrations {
    Migrations {
        SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
        SchemaVersion(2, steps: steps)
    }
}

extension ConformanceSuite {
    static let migrationCases: [ConformanceCase] = [
        ConformanceCase("migrations", "a new store is stamped with the newest version in one schema change, running nothing") { context in
            let store = context.store
            let migrations = upToVersion2(.renameField("title", to: "name", in: "conformance_notes"))
            let plan = try store.migrationPlan(migrations)
            try expect(plan.stampsOnly && plan.steps.isEmpty && plan.targetVersion == 2, "plan for a new store: \(plan)")
            let recorder = ChangeRecorder(store)
            try expectEqual(try store.migrate(migrations), [1, 2], "versions recorded")
            try expectEqual(try store.schemaVersion(), 2, "schema version")
            try expectEqual(recorder.changeSets.map(\.isSchemaChange), [true], "one change set, a schema change")
            try expectEqual(try store.migrate(migrations), [], "migrating again")
            try expectEqual(recorder.changeSets.count, 1, "nothing announced by a migration with nothing to do")
            try expect(try store.migrationPlan(migrations).isEmpty, "plan once migrated")
        },

        ConformanceCase("migrations", "add field: a default, or computed from the record; a value already there stays") { context in
            let store = try startingStore(context)
            try store.write { tx in _ = try tx.putRow(note(4, "Kept", "3").adding("slug", .text("mine")), in: notes) }
            try store.migrate(upToVersion2(
                .addField("done", to: "conformance_notes", default: false),
                .addField("slug", to: "conformance_notes", indexed: true) { row in
                    try row.decode("title", as: String.self).lowercased().replacingOccurrences(of: " ", with: "-")
                }
            ))
            let after = try rows(store)
            try expectEqual(after.keys.sorted(), [1, 2, 3, 4], "ids")
            try expectEqual(after[1]?.value("done"), .integer(0), "default")
            try expectEqual(after[2]?.value("slug"), .text("call-bob"), "computed")
            try expectEqual(after[4]?.value("slug"), .text("mine"), "a value already there")
            try expectEqual(after[3]?.value("title"), .text("Write report"), "other fields")
            let stored = try description(store)
            try expect(stored?.indexes.contains("slug") == true, "slug indexed: \(String(describing: stored))")
            let query = try Query(entity: notes.with(fields: ["id", "title", "priority", "done", "slug"]), predicate: .compare(column: "slug", .equal, .text("call-bob")))
            try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(2)], "query on the new field")
        },

        ConformanceCase("migrations", "rename field: values and index move, the old name is gone") { context in
            let store = try startingStore(context)
            try store.migrate(upToVersion2(.renameField("title", to: "name", in: "conformance_notes")))
            let after = try rows(store)
            try expectEqual(after[1]?.value("name"), .text("Buy milk"), "renamed value")
            try expect(after.values.allSatisfy { $0.index(of: "title") == nil }, "no row holds the old column: \(after.values.map(\.description))")
            let stored = try description(store)
            try expect(stored?.fields.contains("name") == true && stored?.fields.contains("title") == false, "fields: \(String(describing: stored))")
            try expectEqual(stored?.indexes, ["name"], "indexes")
            let query = try Query(entity: stored ?? notes, predicate: .compare(column: "name", .greater, .text("C")), sort: [SortTerm(column: "name")])
            try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(2), .integer(3)], "query on the new name")
        },

        ConformanceCase("migrations", "rename field again and again: the index follows each name, can be dropped and added under it") { context in
            let store = try startingStore(context)
            let version1 = SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
            let version2 = SchemaVersion(2, .renameField("title", to: "name", in: "conformance_notes"))
            let version3 = SchemaVersion(3, .dropIndex(on: "name", in: "conformance_notes"))
            let version4 = SchemaVersion(4, .addIndex(on: "name", in: "conformance_notes"), .renameField("name", to: "heading", in: "conformance_notes"))
            try store.migrate(Migrations { version1; version2; version3 })
            try expectEqual(try description(store)?.indexes, [], "indexes once the renamed field's index was dropped")
            let byName = try Query(entity: try description(store) ?? notes, predicate: .compare(column: "name", .equal, .text("Call Bob")))
            try expectEqual(try store.read { try $0.rows(byName) }.map { $0.value("id") }, [.integer(2)], "query on the renamed field, unindexed")
            try store.migrate(Migrations { version1; version2; version3; version4 })
            let stored = try description(store)
            try expectEqual(stored?.fields, ["id", "heading", "priority"], "fields")
            try expectEqual(stored?.indexes, ["heading"], "indexes")
            let after = try rows(store)
            try expectEqual(after.mapValues { $0.value("heading") }, [1: .text("Buy milk"), 2: .text("Call Bob"), 3: .text("Write report")], "values under the last name")
            try expect(after.values.allSatisfy { $0.index(of: "title") == nil && $0.index(of: "name") == nil }, "no row holds an earlier name: \(after.values.map(\.description))")
            try expectEqual(after[2]?.value("priority"), .text("10"), "other fields stay")
            let query = try Query(entity: stored ?? notes, predicate: .compare(column: "heading", .greaterOrEqual, .text("Call Bob")), sort: [SortTerm(column: "heading", ascending: false)])
            try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(3), .integer(2)], "query and sort on the last name")
            try store.write { tx in _ = try tx.putRow(Row(columns: ["id", "heading", "priority"], values: [.integer(4), .text("Anew"), .text("5")]), in: stored ?? notes) }
            try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(3), .integer(2)], "a write under the last name keeps the index right")
            try expectEqual(try rows(store)[4]?.value("heading"), .text("Anew"), "the written record")
        },

        ConformanceCase("migrations", "drop field: gone from every record and from the index list") { context in
            let store = try startingStore(context)
            try store.migrate(upToVersion2(.dropField("title", from: "conformance_notes")))
            let after = try rows(store)
            try expectEqual(after.count, 3, "records")
            try expect(after.values.allSatisfy { $0.index(of: "title") == nil }, "no row holds the column: \(after.values.map(\.description))")
            try expectEqual(after[2]?.value("priority"), .text("10"), "other fields stay")
            try expectEqual(try description(store)?.indexes, [], "indexes")
        },

        ConformanceCase("migrations", "change type: every value converted, queries order by the new type") { context in
            let store = try startingStore(context)
            try store.migrate(upToVersion2(.changeType(of: "priority", in: "conformance_notes", from: String.self, to: Int.self) { Int($0) ?? 0 }))
            let after = try rows(store)
            try expectEqual(after[2]?.value("priority"), .integer(10), "converted")
            let query = try Query(entity: try description(store) ?? notes, sort: [SortTerm(column: "priority")])
            try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(3), .integer(1), .integer(2)], "sorted numerically")
        },

        ConformanceCase("migrations", "change type to values of several kinds and nulls, on an indexed field: values, order, queries and later writes right") { context in
            let store = try startingStore(context)
            try store.write { tx in
                _ = try tx.putRow(note(4, "Odd", "x"), in: notes)
                _ = try tx.putRow(Row(columns: ["id", "title"], values: [.integer(5), .text("No priority")]), in: notes)
            }
            try store.migrate(upToVersion2(
                .addIndex(on: "priority", in: "conformance_notes"),
                .changeType(of: "priority", in: "conformance_notes", from: String?.self, to: Value.self) { text in
                    guard let text else { return .null }
                    guard let number = Int64(text) else { return .text(text.uppercased()) }
                    return number > 5 ? .real(Double(number) + 0.5) : .integer(number)
                }
            ))
            let expected: [Int64: Value] = [1: .integer(2), 2: .real(10.5), 3: .integer(1), 4: .text("X"), 5: .null]
            try expectEqual(try rows(store).mapValues { $0.value("priority") }, expected, "converted values")
            let stored = try description(store) ?? notes
            let sorted = try Query(entity: stored, sort: [SortTerm(column: "priority")])
            try expectEqual(try store.read { try $0.rows(sorted) }.map { $0.value("id") }, [5, 3, 1, 2, 4].map { .integer($0) }, "sorted: null, numbers, text")
            for (id, value) in expected where !value.isNull {
                let query = try Query(entity: stored, predicate: .compare(column: "priority", .equal, value))
                try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(id)], "priority = \(value)")
            }
            try store.write { tx in
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(6), .text("Later"), .integer(7)]), in: stored)
                _ = try tx.putRow(Row(columns: ["id", "title", "priority"], values: [.integer(1), .text("Buy milk"), .text("later")]), in: stored)
            }
            let seven = try Query(entity: stored, predicate: .compare(column: "priority", .equal, .integer(7)))
            try expectEqual(try store.read { try $0.rows(seven) }.map { $0.value("id") }, [.integer(6)], "a later write of a number")
            try expectEqual(try rows(store)[1]?.value("priority"), .text("later"), "a later write of text")
        },

        ConformanceCase("migrations", "change type twice in one version: the second sees the first's values; a failing third leaves both undone") { context in
            let store = try startingStore(context)
            let toInt = MigrationStep.changeType(of: "priority", in: "conformance_notes", from: String.self, to: Int.self) { Int($0) ?? 0 }
            let toText = MigrationStep.changeType(of: "priority", in: "conformance_notes", from: Int.self, to: String.self) { "p\($0)" }
            let failing = MigrationStep.changeType(of: "priority", in: "conformance_notes", from: String.self, to: String.self) { text in
                guard text != "p10" else { throw ReservoirError(.misuse, "deliberate failure") }
                return text
            }
            do {
                try store.migrate(upToVersion2(toInt, toText, failing))
                throw ReservoirError(.misuse, "the failing version was applied")
            } catch let error as ReservoirError where error.code == .migrationFailed {
                try expect(error.message.contains("version 2") && error.message.contains("step 3") && error.message.contains("conformance_notes")
                           && error.message.contains("record 2"), "the error names version, step, entity and record: \(error.message)")
            }
            try expectEqual(try rows(store).mapValues { $0.value("priority") }, [1: .text("2"), 2: .text("10"), 3: .text("1")], "the first version's values")
            try store.migrate(upToVersion2(toInt, toText))
            try expectEqual(try rows(store).mapValues { $0.value("priority") }, [1: .text("p2"), 2: .text("p10"), 3: .text("p1")], "converted twice")
            let sorted = try Query(entity: try description(store) ?? notes, sort: [SortTerm(column: "priority")])
            try expectEqual(try store.read { try $0.rows(sorted) }.map { $0.value("id") }, [.integer(3), .integer(2), .integer(1)], "sorted as text")
        },

        ConformanceCase("migrations", "add and drop index: the stored description follows, queries stay right") { context in
            let store = try startingStore(context)
            try store.migrate(upToVersion2(
                .addIndex(on: "priority", in: "conformance_notes"),
                .dropIndex(on: "title", in: "conformance_notes")
            ))
            let stored = try description(store)
            try expectEqual(stored?.indexes, ["priority"], "indexes")
            let query = try Query(entity: stored ?? notes, predicate: .compare(column: "priority", .equal, .text("10")))
            try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(2)], "query on the new index")
            let byTitle = try Query(entity: stored ?? notes, predicate: .compare(column: "title", .equal, .text("Buy milk")))
            try expectEqual(try store.read { try $0.rows(byTitle) }.map { $0.value("id") }, [.integer(1)], "query on the unindexed field")
        },

        ConformanceCase("migrations", "transform rewrites every record; rename entity moves them all") { context in
            let store = try startingStore(context)
            try store.migrate(upToVersion2(
                .transform("conformance_notes") { row in
                    row["title"] = .text(try row.decode("title", as: String.self).uppercased())
                },
                .renameEntity("conformance_notes", to: "conformance_tasks")
            ))
            try expectEqual(try rows(store), [:], "no records under the old name")
            try expect(try description(store) == nil, "old entity not listed")
            let moved = try rows(store, "conformance_tasks")
            try expectEqual(moved.keys.sorted(), [1, 2, 3], "records under the new name")
            try expectEqual(moved[3]?.value("title"), .text("WRITE REPORT"), "transformed before the rename")
            try expectEqual(try description(store, "conformance_tasks")?.indexes, ["title"], "indexes move with the entity")
        },

        ConformanceCase("migrations", "split entity moves chosen fields to a new entity under the same ids; merge entity brings them back") { context in
            let store = try startingStore(context)
            let split = SchemaVersion(2, .splitEntity("conformance_notes", fields: ["title"], into: "conformance_titles"))
            try expect(!split.isAdditive, "a split is not additive")
            let plan = try store.migrationPlan(Migrations {
                SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                split
                SchemaVersion(3, .addField("checked", to: "conformance_titles", default: false), .mergeEntity("conformance_titles", into: "conformance_notes"))
            })
            try expectEqual(plan.steps.map { "\($0.version).\($0.index) \($0.step.kind) \($0.records)" },
                            ["2.1 splitEntity 3", "3.1 addField 3", "3.2 mergeEntity 3"], "plan")
            let recorder = ChangeRecorder(store)
            try store.migrate(Migrations { SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes")); split })
            try expectEqual(recorder.changeSets.map(\.isSchemaChange), [true], "one change set, a schema change")
            let after = try rows(store)
            try expectEqual(after.keys.sorted(), [1, 2, 3], "the records stay")
            try expect(after.values.allSatisfy { $0.index(of: "title") == nil }, "no record holds the moved field: \(after.values.map(\.description))")
            try expectEqual(after[2]?.value("priority"), .text("10"), "other fields stay")
            try expectEqual(try description(store)?.fields, ["id", "priority"], "the entity's fields")
            let moved = try rows(store, "conformance_titles")
            try expectEqual(moved.keys.sorted(), [1, 2, 3], "one new record per record, same ids")
            try expectEqual(moved[2]?.value("title"), .text("Call Bob"), "the moved value")
            try expectEqual(moved[2]?.columns.sorted(), ["id", "title"], "the new record's columns")
            let titles = try description(store, "conformance_titles")
            try expectEqual(titles?.indexes, ["title"], "the index moves with the field")
            let byTitle = try Query(entity: titles ?? notes, predicate: .compare(column: "title", .equal, .text("Buy milk")))
            try expectEqual(try store.read { try $0.rows(byTitle) }.map { $0.value("id") }, [.integer(1)], "query on the moved field")

            try store.migrate(Migrations {
                SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                split
                SchemaVersion(3, .addField("checked", to: "conformance_titles", default: false), .mergeEntity("conformance_titles", into: "conformance_notes"))
            })
            try expect(try description(store, "conformance_titles") == nil, "the merged entity is gone")
            let merged = try rows(store)
            for note in startingNotes {
                let id = note.value("id").integerValue
                for column in ["title", "priority"] {
                    try expectEqual(merged[id]?.value(column), note.value(column), "record \(id) \(column) after the merge")
                }
                try expectEqual(merged[id]?.value("checked"), .integer(0), "record \(id): a field added to the merged entity comes along")
            }
            let mergedDescription = try description(store)
            try expect(mergedDescription?.indexes.contains("title") == true, "the index comes back: \(String(describing: mergedDescription))")
            let query = try Query(entity: try description(store) ?? notes, predicate: .compare(column: "title", .greater, .text("C")), sort: [SortTerm(column: "title")])
            try expectEqual(try store.read { try $0.rows(query) }.map { $0.value("id") }, [.integer(2), .integer(3)], "query on the merged field")
        },

        ConformanceCase("migrations", "split and merge that cannot run roll their version back, naming the cause") { context in
            let store = try startingStore(context)
            let splitVersion = SchemaVersion(2, .splitEntity("conformance_notes", fields: ["priority"], into: "conformance_priorities"))
            try store.migrate(Migrations { SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes")); splitVersion })
            // A record of the split entity with no record to go back to.
            try store.write { tx in
                _ = try tx.putRow(Row(columns: ["id", "priority"], values: [.integer(9), .text("4")]),
                                  in: EntityDescription(name: "conformance_priorities", fields: ["id", "priority"], integerIDs: true))
            }
            let before = try rows(store)
            let split = try rows(store, "conformance_priorities")
            let sequence = try store.read { try $0.lastSequence() }
            let orphan = try expectError(.migrationFailed, "a merge with a record that has no counterpart") {
                try store.migrate(Migrations {
                    SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                    splitVersion
                    SchemaVersion(3, .mergeEntity("conformance_priorities", into: "conformance_notes"))
                })
            }
            for part in ["version 3", "step 1", "conformance_priorities", "record 9", "conformance_notes"] {
                try expect(orphan.message.contains(part), "the message names \(part): \(orphan.message)")
            }
            try expectEqual(try rows(store), before, "the target's records unchanged")
            try expectEqual(try rows(store, "conformance_priorities"), split, "the merged entity's records unchanged")
            try expectEqual(try store.schemaVersion(), 2, "schema version")
            try expectEqual(try store.read { try $0.lastSequence() }, sequence, "nothing committed")

            let shared = try expectError(.migrationFailed, "a merge of entities that share a field") {
                let current = try description(store) ?? notes
                try store.write { tx in _ = try tx.putRow(Row(columns: ["id", "title"], values: [.integer(9), .text("Nine")]), in: current) }
                return try store.migrate(Migrations {
                    SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                    splitVersion
                    SchemaVersion(3, .addField("title", to: "conformance_priorities", default: "x"), .mergeEntity("conformance_priorities", into: "conformance_notes"))
                })
            }
            try expect(shared.message.contains("step 2") && shared.message.contains("\"title\""), "the message names the step and the field: \(shared.message)")
            try expectEqual(try rows(store, "conformance_priorities"), split, "nothing of step 1 stays")
            try expectError(.migrationFailed, "a split into an entity that holds records") {
                try store.migrate(Migrations {
                    SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                    splitVersion
                    SchemaVersion(3, .splitEntity("conformance_notes", fields: ["title"], into: "conformance_priorities"))
                })
            }
            try expectError(.migrationFailed, "a split of a field that does not exist") {
                try store.migrate(Migrations {
                    SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                    splitVersion
                    SchemaVersion(3, .splitEntity("conformance_notes", fields: ["titel"], into: "conformance_titles"))
                })
            }
            try expectEqual(try store.schemaVersion(), 2, "schema version after the failures")
        },

        ConformanceCase("migrations", "make searchable: every record gets its folded shadow columns, so folded fetches find them at once") { context in
            let store = context.store
            try store.write { tx in
                for (id, text, alt) in [(1, "Café au lait", "Crème"), (2, "CAFE NOIR", nil), (3, "tea", "cafe")] as [(Int, String, String?)] {
                    try tx.insert(PlainPhrase(id: id, text: text, alt: alt))
                }
            }
            try store.migrate(Migrations { SchemaVersion(1) })
            let migrations = Migrations {
                SchemaVersion(1)
                SchemaVersion(2, .makeSearchable("text", in: "conformance_phrases"), .makeSearchable("alt", in: "conformance_phrases"))
            }
            try expect(migrations.versions[1].isAdditive, "making a field searchable is additive")
            try expectEqual(try store.migrationPlan(migrations).steps.map { "\($0.version).\($0.index) \($0.step.kind) \($0.records)" },
                            ["2.1 makeSearchable 3", "2.2 makeSearchable 3"], "plan")
            try store.migrate(migrations)
            let both: TextMatchOptions = [.caseInsensitive, .diacriticInsensitive]
            let stored = try description(store, "conformance_phrases")
            try expectEqual(stored?.fields.sorted(), Phrase.schema.entity.fields.sorted(), "the fields a searchable schema declares")
            try expectEqual(stored?.indexes.sorted(), Phrase.schema.entity.indexes.sorted(), "the indexes a searchable schema declares")
            let after = try rows(store, "conformance_phrases")
            try expectEqual(after[1]?.value(TextFolding.shadowColumn(for: "text", options: both)), .text(TextFolding.fold("Café au lait", options: both)), "a shadow value")
            try expectEqual(after[2]?.value(TextFolding.shadowColumn(for: "alt", options: both)), .null, "no text, no shadow")
            // Phrase declares the fields searchable; its folded fetch checks that no row lacks its shadows.
            try expectEqual(try store.fetch(FetchRequest<Phrase>(where: .contains(\.text, "cafe", options: both))).map(\.id), [1, 2], "folded fetch on text")
            try expectEqual(try store.fetch(FetchRequest<Phrase>(where: .equals(\.alt, "creme", options: both))).map(\.id), [1], "folded fetch on the indexed alt")
            try expectEqual(try store.migrate(Migrations { SchemaVersion(1) }), [], "an older app keeps using the store")

            let current = try description(store, "conformance_phrases") ?? Phrase.schema.entity
            try store.write { tx in _ = try tx.putRow(Row(columns: ["id", "text", "note"], values: [.integer(5), .integer(42), .text("")]), in: current) }
            let failure = try expectError(.migrationFailed, "a value that is not text") {
                try store.migrate(Migrations {
                    SchemaVersion(1)
                    SchemaVersion(2, .makeSearchable("text", in: "conformance_phrases"), .makeSearchable("alt", in: "conformance_phrases"))
                    SchemaVersion(3, .makeSearchable("note", in: "conformance_phrases"), .makeSearchable("text", in: "conformance_phrases"))
                })
            }
            for part in ["version 3", "step 2", "record 5", "not text"] {
                try expect(failure.message.contains(part), "the message names \(part): \(failure.message)")
            }
            try expect(try rows(store, "conformance_phrases").values.allSatisfy { $0.index(of: "note__ci") == nil }, "nothing of step 1 stays")
            try expectEqual(try store.schemaVersion(), 2, "schema version after the failure")
        },

        ConformanceCase("migrations", "a throwing step rolls the whole version back, naming version, step, entity and record") { context in
            let store = try startingStore(context)
            let before = try rows(store)
            let sequence = try store.read { try $0.lastSequence() }
            let recorder = ChangeRecorder(store)
            let error = try expectError(.migrationFailed, "a transform that throws") {
                try store.migrate(upToVersion2(
                    .renameField("title", to: "name", in: "conformance_notes"),
                    .transform("conformance_notes") { row in
                        if row.value("id") == .integer(3) { throw ReservoirError(.misuse, "deliberate failure") }
                        row["priority"] = .text("0")
                    }
                ))
            }
            for part in ["version 2", "step 2", "conformance_notes", "record 3", "deliberate failure"] {
                try expect(error.message.contains(part), "the message names \(part): \(error.message)")
            }
            try expectEqual(try rows(store), before, "records unchanged")
            try expectEqual(try description(store)?.fields, notes.fields, "fields unchanged")
            try expectEqual(try store.schemaVersion(), 1, "schema version")
            try expectEqual(try store.read { try $0.lastSequence() }, sequence, "nothing committed")
            try expectEqual(recorder.changeSets.count, 0, "nothing announced")

            let unconvertible = try expectError(.migrationFailed, "a value that does not convert") {
                try store.write { tx in _ = try tx.putRow(note(4, "Odd", "x").replacing("priority", .real(2.5)), in: notes) }
                return try store.migrate(upToVersion2(.changeType(of: "priority", in: "conformance_notes", from: String.self, to: Int.self) { Int($0) ?? 0 }))
            }
            for part in ["version 2", "step 1", "conformance_notes", "record 4", "priority"] {
                try expect(unconvertible.message.contains(part), "the message names \(part): \(unconvertible.message)")
            }
            try expectEqual(try rows(store)[1]?.value("priority"), .text("2"), "records unchanged")
            try expectError(.migrationFailed, "a field that does not exist") {
                try store.migrate(upToVersion2(.renameField("titel", to: "name", in: "conformance_notes")))
            }
            try expectEqual(try store.schemaVersion(), 1, "schema version after the failures")
        },

        ConformanceCase("migrations", "a store at an unknown version is refused by name unless every unknown version is additive") { context in
            let store = try startingStore(context)
            let versionOne = Migrations { SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes")) }
            try store.migrate(upToVersion2(.addField("done", to: "conformance_notes", default: false)))
            try expectEqual(try store.migrate(versionOne), [], "an older app on an additive version")
            try expectEqual(try store.schemaVersion(), 2, "the version stays")
            try store.migrate(Migrations {
                SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                SchemaVersion(2, .addField("done", to: "conformance_notes", default: false))
                SchemaVersion(3, .renameField("title", to: "name", in: "conformance_notes"))
            })
            let refused = try expectError(.unknownSchemaVersion, "an older app on a version that renamed") { try store.migrate(versionOne) }
            for part in ["version 3", "up to 1", "renameField"] {
                try expect(refused.message.contains(part), "the message names \(part): \(refused.message)")
            }
            if store.capabilities.isSuperset(of: [.persistent, .multiProcess]) {
                // Another opener of the location: refused at open, and the store it opened is closed.
                try expectError(.unknownSchemaVersion, "opening with the older app's migrations") {
                    try Store.open(context.configuration, registry: context.harness.registry, migrations: versionOne)
                }
            }
            try expectError(.unknownSchemaVersion, "the older app's plan") { try store.migrationPlan(versionOne) }
            try expectEqual(try store.schemaVersion(), 3, "the version stays")
        },

        ConformanceCase("migrations", "a dry run lists each step with the records it touches and changes nothing") { context in
            let store = try startingStore(context)
            let sequence = try store.read { try $0.lastSequence() }
            let plan = try store.migrationPlan(Migrations {
                SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
                SchemaVersion(2,
                    .renameEntity("conformance_notes", to: "conformance_tasks"),
                    .addField("done", to: "conformance_tasks", default: false)
                )
                SchemaVersion(3, .dropField("done", from: "conformance_nothing"))
            })
            try expectEqual(plan.currentVersion, 1, "current version")
            try expectEqual(plan.targetVersion, 3, "target version")
            try expectEqual(plan.steps.map { "\($0.version).\($0.index) \($0.step.kind) \($0.records)" },
                            ["2.1 renameEntity 3", "2.2 addField 3", "3.1 dropField 0"], "steps")
            try expectEqual(try store.schemaVersion(), 1, "schema version")
            try expectEqual(try store.read { try $0.lastSequence() }, sequence, "nothing committed")
            try expectEqual(try rows(store), Dictionary(uniqueKeysWithValues: startingNotes.map { ($0.value("id").integerValue, $0) }), "records")
        },

        ConformanceCase("migrations", "the schema change makes live fetches re-read and marks history") { context in
            let store = context.store
            try store.insertItems(standardItems)
            try store.migrate(Migrations { SchemaVersion(1) })
            let token = try store.currentHistoryToken
            let request = FetchRequest<Item>(sortBy: [.ascending(\.id)])
            let live = LiveRecorder<CollectionDifference<Item>>()
            store.differencesPublisher(for: request).subscribe(live)
            let recorder = ChangeRecorder(store)
            try store.migrate(Migrations {
                SchemaVersion(1)
                SchemaVersion(2, .transform("conformance_items") { row in row["name"] = .text(try row.decode("name", as: String.self).uppercased()) })
            })
            let expected = try store.fetch(request)
            try expect(expected.allSatisfy { $0.name == $0.name.uppercased() }, "the migration ran: \(expected.map(\.name))")
            try expectEqual(live.applied, expected, "the live fetch after the migration")
            try expectEqual(recorder.changeSets.map(\.isSchemaChange), [true], "one change set, a schema change")
            try expect(recorder.changeSets.first?.isComplete == false, "a schema change is not complete: \(recorder.changeSets)")
            let history = try store.history(after: token, limit: 10)
            try expectEqual(history.map(\.isSchemaChange), [true], "history marks the schema change")
            live.cancel()
        },

        ConformanceCase("migrations", "a live history consumer receives the schema change once, in order, marked", waiting: { context in
            let store = context.store
            let start = try store.currentHistoryToken
            try store.insertItems([Item(id: 1, name: "one")])
            let recorder = LiveRecorder<HistoryChangeSet>()
            store.historyPublisher(after: start).subscribe(recorder)
            try expect(await eventually { recorder.values.count >= 1 }, "the missed change set arrived: \(recorder.values.count)")
            try store.migrate(Migrations { SchemaVersion(1, .transform("conformance_items") { row in row["rank"] = .integer(1) }) })
            try store.insertItems([Item(id: 2, name: "two")])
            try expect(await eventually { recorder.values.count >= 3 }, "the migration and the write after it arrived: \(recorder.values.count)")
            try expectEqual(recorder.values.map(\.isSchemaChange), [false, true, false], "the schema change, marked, between the writes")
            try expectEqual(recorder.values.map(\.token), try store.history(after: start, limit: 10).map(\.token), "the tokens against history(after:)")
            recorder.cancel()
        }),

        ConformanceCase("migrations", "another store on the location hears the schema change and re-reads", requires: .multiProcess) { context in
            try context.store.insertItems(standardItems)
            let other = try context.openAnother()
            let request = FetchRequest<Item>(sortBy: [.ascending(\.id)])
            let live = LiveRecorder<CollectionDifference<Item>>()
            other.differencesPublisher(for: request).subscribe(live)
            let recorder = ChangeRecorder(other)
            try context.store.migrate(Migrations {
                SchemaVersion(1, .transform("conformance_items") { row in row["rank"] = .integer(7) })
            })
            other.pollExternalChanges()
            try expect(recorder.changeSets.contains { $0.isSchemaChange && $0.isExternal }, "an external schema change: \(recorder.changeSets)")
            try expectEqual(live.applied, try other.fetch(request), "the other store's live fetch")
            try expect(live.applied.allSatisfy { $0.rank == 7 }, "it shows the migrated records: \(live.applied)")
            try expectEqual(try other.schemaVersion(), 1, "the other store reads the version")
            live.cancel()
        },

        ConformanceCase("migrations", "a read-only opener of a store at the app's version opens with its migrations",
                        requires: [.persistent, .multiProcess, .readOnlyOpening]) { context in
            let migrations = upToVersion2(.renameField("title", to: "name", in: "conformance_notes"))
            try context.store.putRows(startingNotes, in: notes)
            try context.store.migrate(migrations)
            let configuration = context.configuration + (context.configuration.contains("?") ? "&" : "?") + "mode=readonly"
            let reader = try Store.open(configuration, registry: context.harness.registry, migrations: migrations)
            defer { reader.close() }
            try expectEqual(try reader.schemaVersion(), 2, "the reader's schema version")
            try expectEqual(try rows(reader)[1]?.value("name"), .text("Buy milk"), "the reader sees the migrated records")
        },

        ConformanceCase("migrations", "a store open while another migrates it past its app's versions refuses writes and ends subscriptions (found by its catch-up)", requires: .multiProcess) { context in
            try concurrentMigration(context, pollsFirst: true)
        },

        ConformanceCase("migrations", "a store open while another migrates it past its app's versions refuses writes and ends subscriptions (found by its write)", requires: .multiProcess) { context in
            try concurrentMigration(context, pollsFirst: false)
        },
    ]
}

/// An older app's store (migrated to version 1) stays open while a newer app's
/// store on the same location migrates it: past an additive version 2 it goes on; past version 3,
/// a rename, its next write is refused and rolled back and its subscriptions end, both with
/// `.unknownSchemaVersion`. `pollsFirst`: the older store's catch-up meets the schema change
/// before its write does (else the write finds it inside its transaction).
private func concurrentMigration(_ context: ConformanceContext, pollsFirst: Bool) throws {
    // Probes only when told to (no timer, no commit signal), so which path finds the migration is this case's choice.
    let configuration = try StoreConfiguration(context.configuration)
    let older = try Store(backend: context.harness.registry.makeBackend(configuration), configuration: configuration,
                          pollInterval: .seconds(3600), usesCommitSignal: false)
    defer { older.close() }
    try older.putRows(startingNotes, in: notes)
    try older.migrate(Migrations { SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes")) })
    let live = LiveRecorder<CollectionDifference<Item>>()
    older.differencesPublisher(for: FetchRequest<Item>()).subscribe(live)
    let newer = try context.openAnother()
    let versionTwo = SchemaVersion(2, .addField("done", to: "conformance_notes", default: false))
    try newer.migrate(Migrations { SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes")); versionTwo })
    older.pollExternalChanges()
    try older.write { tx in _ = try tx.putRow(note(9, "Additive is fine", "1"), in: notes) }
    try expect(live.completion == nil, "an additive version leaves subscriptions running: \(String(describing: live.completion))")
    try newer.migrate(Migrations {
        SchemaVersion(1, .addIndex(on: "title", in: "conformance_notes"))
        versionTwo
        SchemaVersion(3, .renameField("title", to: "name", in: "conformance_notes"))
    })
    if pollsFirst { older.pollExternalChanges() }
    let refused = try expectError(.unknownSchemaVersion, "a write by the older app") {
        try older.write { tx in _ = try tx.putRow(note(10, "Old shape", "1"), in: notes) }
    }
    try expect(refused.message.contains("version 3") && refused.message.contains("up to 1"), "the message names both versions: \(refused.message)")
    try expectError(.unknownSchemaVersion, "the older app's next write") {
        try older.write { tx in _ = try tx.putRow(note(11, "Old shape", "1"), in: notes) }
    }
    older.pollExternalChanges()
    guard case let .failure(error)? = live.completion, (error as? ReservoirError)?.code == .unknownSchemaVersion else {
        throw ConformanceFailure(message: "the older store's subscription ended with \(String(describing: live.completion)), expected .unknownSchemaVersion", file: #fileID, line: #line)
    }
    let after = try rows(newer)
    try expect(after[10] == nil && after[11] == nil, "nothing of the refused writes reached the store: \(after.keys.sorted())")
    try expectEqual(after[9]?.value("name"), .text("Additive is fine"), "the older app's write before the rename was migrated")
}

private extension Row {
    func adding(_ column: String, _ value: Value) -> Row {
        var row = self
        row[column] = value
        return row
    }

    func replacing(_ column: String, _ value: Value) -> Row { adding(column, value) }
}

private extension EntityDescription {
    func with(fields: [String]) -> EntityDescription {
        var copy = self
        copy.fields = fields
        return copy
    }
}
