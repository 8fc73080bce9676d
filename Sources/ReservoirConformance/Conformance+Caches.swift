import Foundation
import Reservoir

private struct Abort: Error {}

/// What a backend remembers between transactions (catalogs of tables and columns, layouts,
/// handles, statement caches, the newest sequence) must never outlive what it describes:
/// a rolled-back write, an empty commit, another store's commit or a reopened store each
/// leave the next transaction seeing exactly what is stored.
extension ConformanceSuite {
    static let cacheCases: [ConformanceCase] = [
        ConformanceCase("caches", "a failed write, then an empty write, then a write sees every record") { context in
            // The SQLite backend once trusted the catalog the failed write had emptied: the
            // third write found no tables, so get gave nil, fetch [] and delete false.
            try context.store.insertItems([Item(id: 1, name: "one", rank: 1), Item(id: 2, name: "two", rank: 2)])
            try? context.store.write { _ in throw Abort() }
            try context.store.write { _ in }
            try context.store.write { tx in
                try expectEqual(try tx.get(Item.self, id: 1)?.name, "one", "get inside the write")
                try expectEqual(try tx.fetch(FetchRequest<Item>()).map(\.id), [1, 2], "fetch inside the write")
                try expectEqual(try tx.count(FetchRequest<Item>(where: \.rank >= 2)), 1, "count inside the write")
                try expect(try tx.delete(Item.self, id: 2), "delete of a stored record reports it existed")
                try tx.update(Item(id: 1, name: "uno", rank: 1))
                try tx.insert(Item(id: 3, name: "three"))
            }
            try expectEqual(try context.store.fetch(Item.self).map(\.name), ["uno", "three"], "records after the third write")
        },

        ConformanceCase("caches", "a failed write that changed records, then an empty write, then a write") { context in
            try context.store.insertItems([Item(id: 1, name: "one")])
            try? context.store.write { tx in
                try tx.insert(Item(id: 2, name: "two"))
                try tx.update(Item(id: 1, name: "changed"))
                try tx.insert(AllTypes.sample(1))
                throw Abort()
            }
            try context.store.write { _ in }
            try context.store.write { tx in
                try tx.insert(Item(id: 2, name: "two again"))
                try tx.insert(AllTypes.sample(2))
                try expectEqual(try tx.get(Item.self, id: 1)?.name, "one", "the rolled-back update left the record as it was")
            }
            try expectEqual(try context.store.fetch(Item.self).map(\.name), ["one", "two again"], "items")
            try expectEqual(try context.store.fetch(AllTypes.self).map(\.int), [2], "the entity first created by a rolled-back write")
        },

        ConformanceCase("caches", "a rolled-back new field, then an empty write, then the field is written") { context in
            try context.store.write { tx in try tx.insert(EvolvingV1(id: "a", title: "first")) }
            try? context.store.write { tx in
                try tx.insert(EvolvingV2(id: "b", title: "second", rating: 3))
                throw Abort()
            }
            try context.store.write { _ in }
            try context.store.write { tx in
                try expectEqual(try tx.fetch(EvolvingV1.self).map(\.id), ["a"], "fetch inside the write")
                try tx.insert(EvolvingV2(id: "b", title: "second", rating: 3))
            }
            try expectEqual(try context.store.fetch(FetchRequest<EvolvingV2>(where: \.rating == 3)).map(\.id), ["b"], "the new field, queried")
            try expectEqual(try context.store.fetch(EvolvingV1.self).map(\.id), ["a", "b"], "every row")
        },

        ConformanceCase("caches", "a caught error inside a write does not spoil the commit or the next write") { context in
            try context.store.insertItems([Item(id: 1, name: "one")])
            try context.store.write { tx in
                try expectError(.duplicateID, "inserting an existing id") { try tx.insert(Item(id: 1, name: "dup")) }
                try expectError(.notFound, "updating a missing id") { try tx.update(Item(id: 9, name: "nine")) }
                try tx.insert(Item(id: 2, name: "two"))
            }
            try context.store.write { _ in }
            try context.store.write { tx in
                try expectEqual(try tx.fetch(Item.self).map(\.name), ["one", "two"], "fetch inside the next write")
            }
        },

        ConformanceCase("caches", "sequences stay consecutive across failed and empty writes") { context in
            let recorder = ChangeRecorder(context.store)
            try context.store.insertItems([Item(id: 1, name: "one")])
            try? context.store.write { tx in
                try tx.insert(Item(id: 2, name: "two"))
                throw Abort()
            }
            try context.store.write { _ in }
            try context.store.write { tx in _ = try tx.upsert(Item(id: 1, name: "one")) }  // identical: no change
            try context.store.insertItems([Item(id: 3, name: "three")])
            let sequences = recorder.changeSets.map(\.sequence)
            try expectEqual(sequences.count, 2, "change sets: one per write that changed something")
            try expectEqual(sequences.last, (sequences.first ?? 0) + 1, "the second change set's sequence follows the first's")
            try expectEqual(try context.store.read { try $0.lastSequence() }, sequences.last ?? 0, "last sequence")
        },

        ConformanceCase("caches", "after another store's commit, an empty write, then a write sees that commit", requires: .multiProcess) { context in
            // An empty write looks at no table: it proves nothing about what this store
            // knows of the tables, which another store may have changed meanwhile.
            let other = try context.openAnother()
            try context.store.insertItems([Item(id: 1, name: "one")])
            try other.write { tx in
                try tx.insert(Item(id: 2, name: "two"))
                try tx.update(Item(id: 1, name: "changed elsewhere"))
                try tx.insert(AllTypes.sample(5))
                try tx.insert(EvolvingV2(id: "x", title: "new entity", rating: 1))
            }
            try? other.write { tx in
                try tx.delete(Item.self, id: 1)
                throw Abort()
            }
            try context.store.write { _ in }
            try context.store.write { tx in
                try expectEqual(try tx.fetch(Item.self).map(\.name), ["changed elsewhere", "two"], "items inside the next write")
                try expectEqual(try tx.fetch(AllTypes.self).map(\.int), [5], "an entity another store created")
                try tx.insert(AllTypes.sample(6))
                try tx.insert(EvolvingV2(id: "y", title: "mine", rating: 2))
                try tx.delete(Item.self, id: 2)
            }
            try other.write { _ in }
            try other.write { tx in
                try expectEqual(try tx.fetch(Item.self).map(\.id), [1], "the other store sees the delete")
                try expectEqual(try tx.fetch(AllTypes.self).map(\.int).sorted(), [5, 6], "and the insert")
                try expectEqual(try tx.fetch(FetchRequest<EvolvingV2>(where: \.rating >= 1)).map(\.id), ["x", "y"], "and the other new entity")
            }
            let mine = try context.store.read { try $0.lastSequence() }
            let theirs = try other.read { try $0.lastSequence() }
            try expectEqual(mine, theirs, "both stores read the same last sequence")
        },

        ConformanceCase("caches", "a store reopened after a failed write sees what was committed", requires: .persistent) { context in
            try context.store.insertItems([Item(id: 1, name: "one")])
            try? context.store.write { tx in
                try tx.insert(Item(id: 2, name: "two"))
                throw Abort()
            }
            let sequence = try context.store.read { try $0.lastSequence() }
            context.store.close()
            let reopened = try context.openAnother()
            try expectEqual(try reopened.read { try $0.lastSequence() }, sequence, "last sequence after reopening")
            try reopened.write { _ in }
            try reopened.write { tx in
                try expectEqual(try tx.fetch(Item.self).map(\.id), [1], "fetch inside the first real write")
                try tx.insert(Item(id: 2, name: "two"))
            }
            try expectEqual(try reopened.fetch(Item.self).map(\.id), [1, 2], "items")
        },
    ]
}
