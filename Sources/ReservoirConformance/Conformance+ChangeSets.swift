import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    static let changeSetCases: [ConformanceCase] = [
        ConformanceCase("change sets", "one per commit, delivered before write returns") { context in
            let recorder = ChangeRecorder(context.store)
            var sequences: [UInt64] = []
            for i in 1...5 {
                try context.store.write { tx in try tx.insert(Item(id: i, name: "n\(i)")) }
                try expectEqual(recorder.changeSets.count, i, "change sets after write #\(i) returned")
                sequences.append(recorder.changeSets[i - 1].sequence)
            }
            try expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "sequences increase: \(sequences)")
            try expectEqual(try context.store.read { try $0.lastSequence() }, sequences.last ?? 0, "lastSequence is the newest change set's")
            try expect(recorder.changeSets.allSatisfy { !$0.isExternal }, "own commits are not external")
        },

        ConformanceCase("change sets", "they carry the new rows and deleted ids") { context in
            try context.store.insertItems([Item(id: 1, name: "one"), Item(id: 2, name: "two")])
            let recorder = ChangeRecorder(context.store)
            try context.store.write { tx in
                try tx.insert(Item(id: 3, name: "three", rank: 3))
                try tx.update(Item(id: 1, name: "uno", score: 1.5))
                try tx.delete(Item.self, id: 2)
            }
            try expectEqual(recorder.changeSets.count, 1, "change sets")
            guard let changes = recorder.changeSets.first?.changes(to: "conformance_items") else {
                throw ConformanceFailure(message: "no changes to conformance_items in \(recorder.changeSets)", file: #fileID, line: #line)
            }
            let decoder = RowDecoder()
            try expectEqual(try changes.inserted.map { try decoder.decode(Item.self, from: $0.row) }, [Item(id: 3, name: "three", rank: 3)], "inserted rows")
            try expectEqual(changes.inserted.map(\.id), [.integer(3)], "inserted ids")
            try expectEqual(try changes.updated.map { try decoder.decode(Item.self, from: $0.row) }, [Item(id: 1, name: "uno", score: 1.5)], "updated rows")
            try expectEqual(changes.deleted, [.integer(2)], "deleted ids")
        },

        ConformanceCase("change sets", "none for a rollback, an empty write or a no-op") { context in
            try context.store.insertItems([Item(id: 1, name: "one")])
            let recorder = ChangeRecorder(context.store)
            let before = try context.store.read { try $0.lastSequence() }
            try context.store.write { _ in }
            try context.store.write { tx in _ = try tx.upsert(Item(id: 1, name: "one")) }
            try context.store.write { tx in _ = try tx.delete(Item.self, id: 99) }
            try context.store.write { tx in
                try tx.insert(Item(id: 2, name: "brief"))
                try tx.delete(Item.self, id: 2)
            }
            try context.store.write { tx in
                try tx.update(Item(id: 1, name: "changed"))
                try tx.update(Item(id: 1, name: "one"))
            }
            _ = try? context.store.write { tx -> Void in
                try tx.insert(Item(id: 3, name: "rolled back"))
                throw ReservoirError(.misuse, "deliberate")
            }
            try expectEqual(recorder.changeSets.map(\.description), [], "change sets")
            try expectEqual(try context.store.read { try $0.lastSequence() }, before, "last sequence")
        },

        ConformanceCase("change sets", "changes within a transaction are netted") { context in
            try context.store.insertItems([Item(id: 1, name: "one"), Item(id: 2, name: "two")])
            let recorder = ChangeRecorder(context.store)
            try context.store.write { tx in
                try tx.insert(Item(id: 3, name: "new"))
                try tx.update(Item(id: 3, name: "newer"))       // insert + update = insert of the final row
                try tx.delete(Item.self, id: 1)
                try tx.insert(Item(id: 1, name: "reborn"))      // delete + insert = update
                try tx.update(Item(id: 2, name: "2a"))
                try tx.update(Item(id: 2, name: "2b"))          // update + update = one update
            }
            guard let changes = recorder.changeSets.first?.changes(to: "conformance_items"), recorder.changeSets.count == 1 else {
                throw ConformanceFailure(message: "expected one change set, got \(recorder.changeSets)", file: #fileID, line: #line)
            }
            let decoder = RowDecoder()
            try expectEqual(try changes.inserted.map { try decoder.decode(Item.self, from: $0.row).name }, ["newer"], "inserted")
            try expectEqual(Set(try changes.updated.map { try decoder.decode(Item.self, from: $0.row).name }), ["reborn", "2b"], "updated")
            try expectEqual(changes.deleted, [], "deleted")
        },

        ConformanceCase("change sets", "one change set spans every entity a write touched") { context in
            let recorder = ChangeRecorder(context.store)
            let sample = AllTypes.sample(2)
            try context.store.write { tx in
                try tx.insert(Item(id: 1, name: "one"))
                try tx.insert(sample)
            }
            try expectEqual(recorder.changeSets.count, 1, "change sets")
            try expectEqual(recorder.changeSets.first?.entities.map(\.entity), ["conformance_all_types", "conformance_items"], "entities in the change set")
        },

        ConformanceCase("change sets", "a subscriber without demand gets them later, in order") { context in
            let subscriber = LiveRecorder<ChangeSet>(initialDemand: .none)
            context.store.changeSets.setFailureType(to: (any Error).self).subscribe(subscriber)
            for i in 1...3 { try context.store.write { tx in try tx.insert(Item(id: i, name: "n\(i)")) } }
            try expectEqual(subscriber.values.count, 0, "received before any demand")
            subscriber.request(.max(2))
            try expectEqual(subscriber.values.count, 2, "received after demand 2")
            subscriber.request(.unlimited)
            try context.store.write { tx in try tx.insert(Item(id: 4, name: "n4")) }
            let sequences = subscriber.values.map(\.sequence)
            try expectEqual(sequences.count, 4, "received after unlimited demand")
            try expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "in commit order: \(sequences)")
            subscriber.cancel()
            try context.store.write { tx in try tx.insert(Item(id: 5, name: "n5")) }
            try expectEqual(subscriber.values.count, 4, "received after cancel")
        },

        ConformanceCase("change sets", "the change log takes any limit, Int.max included") { context in
            var sequences: [UInt64] = []
            for i in 1...3 {
                try context.store.write { tx in try tx.insert(Item(id: i, name: "n\(i)")) }
                sequences.append(try context.store.read { try $0.lastSequence() })
            }
            // A limit is a count of change sets, not a bound to add to a sequence: callers
            // wanting "everything" pass Int.max.
            let all = try context.store.backend.read { try $0.changeLog(after: 0, limit: .max) }
            let after = try context.store.backend.read { try $0.changeLog(after: sequences[0], limit: .max) }
            let none = try context.store.backend.read { try $0.changeLog(after: sequences[2], limit: .max) }
            try expect(none.isEmpty, "nothing after the newest sequence: \(none)")
            if context.store.capabilities.contains(.multiProcess) {
                // A shared store's log holds every commit; a single-process one may keep none.
                try expectEqual(Array(Set(all.map(\.sequence))).sorted(), sequences, "sequences in the whole log")
                try expectEqual(Array(Set(after.map(\.sequence))).sorted(), Array(sequences.dropFirst()), "sequences after the first")
                try expectEqual(all.map(\.id), [.integer(1), .integer(2), .integer(3)], "logged ids")
            }
        },
    ]
}
