import Foundation
import Reservoir

private struct Abort: Error {}

extension ConformanceSuite {
    static let transactionCases: [ConformanceCase] = [
        ConformanceCase("transactions", "an error thrown inside write leaves nothing behind") { context in
            try context.store.insertItems([Item(id: 1, name: "one"), Item(id: 2, name: "two")])
            let before = try context.store.read { try $0.lastSequence() }
            let recorder = ChangeRecorder(context.store)
            do {
                try context.store.write { tx in
                    try tx.insert(Item(id: 3, name: "three"))
                    try tx.update(Item(id: 1, name: "changed"))
                    try tx.delete(Item.self, id: 2)
                    try tx.insert(AllTypes.sample(1))
                    throw Abort()
                }
                throw ConformanceFailure(message: "write did not rethrow the closure's error", file: #fileID, line: #line)
            } catch is Abort {}
            try expectEqual(try context.store.fetch(Item.self), [Item(id: 1, name: "one"), Item(id: 2, name: "two")], "records after the rolled-back write")
            try expectEqual(try context.store.fetch(AllTypes.self).count, 0, "other entity after the rolled-back write")
            try expectEqual(try context.store.read { try $0.lastSequence() }, before, "last sequence after the rolled-back write")
            try expectEqual(recorder.changeSets.count, 0, "change sets for a rolled-back write")
        },

        ConformanceCase("transactions", "a write reads its own writes") { context in
            try context.store.insertItems([Item(id: 1, name: "one", rank: 1)])
            try context.store.write { tx in
                try tx.insert(Item(id: 2, name: "two", rank: 2))
                try tx.update(Item(id: 1, name: "uno", rank: 5))
                try expectEqual(try tx.get(Item.self, id: 2)?.name, "two", "get of an insert in the same write")
                try expectEqual(try tx.fetch(FetchRequest<Item>(sortBy: [.descending(\.rank)])).map(\.id), [1, 2], "fetch sees the update's new rank")
                try expectEqual(try tx.count(FetchRequest<Item>(where: \.name == "uno")), 1, "count sees the update")
                try tx.delete(Item.self, id: 2)
                try expectEqual(try tx.get(Item.self, id: 2), nil, "get after delete in the same write")
            }
        },

        ConformanceCase("transactions", "a read sees one snapshot while writes commit") { context in
            try context.store.insertItems([Item(id: 1, name: "one")])
            try context.store.read { snapshot in
                try expectEqual(try snapshot.fetch(Item.self).map(\.id), [1], "snapshot before the write")
                try context.store.write { tx in
                    try tx.insert(Item(id: 2, name: "two"))
                    try tx.update(Item(id: 1, name: "changed"))
                }
                try expectEqual(try snapshot.fetch(Item.self), [Item(id: 1, name: "one")], "snapshot after a write committed")
                try expectEqual(try snapshot.get(Item.self, id: 2), nil, "get in the snapshot after the write")
            }
            try expectEqual(try context.store.fetch(Item.self).map(\.name), ["changed", "two"], "a new read sees the write")
        },

        ConformanceCase("transactions", "a write inside a write is rejected") { context in
            try context.store.write { tx in
                try tx.insert(Item(id: 1, name: "outer"))
                try expectError(.misuse, "nested write") {
                    try context.store.write { inner in try inner.insert(Item(id: 2, name: "inner")) }
                }
            }
            try expectEqual(try context.store.ids(FetchRequest()), [1], "records after the outer write")
        },

        ConformanceCase("transactions", "a transaction used after its closure is rejected") { context in
            nonisolated(unsafe) var escaped: Transaction?
            try context.store.write { tx in escaped = tx }
            guard let transaction = escaped else { throw ConformanceFailure(message: "no transaction escaped", file: #fileID, line: #line) }
            try expectError(.misuse, "insert through an escaped transaction") { try transaction.insert(Item(id: 1, name: "late")) }
            try expectEqual(try context.store.ids(FetchRequest()), [], "records after the rejected insert")
        },

        ConformanceCase("transactions", "concurrent writers are serialised", waiting: { context in
            let recorder = ChangeRecorder(context.store)
            let threads = 4, writesEach = 25
            try await withThrowingTaskGroup(of: Void.self) { group in
                for t in 0..<threads {
                    group.addTask {
                        for i in 0..<writesEach {
                            try await context.store.write { tx in
                                try tx.insert(Item(id: t * 1000 + i, name: "t\(t)", rank: i))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            try expectEqual(try context.store.count(FetchRequest<Item>()), threads * writesEach, "records")
            let sequences = recorder.changeSets.map(\.sequence)
            try expectEqual(sequences.count, threads * writesEach, "change sets")
            try expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "sequences strictly increase: \(sequences)")
        }),
    ]
}
