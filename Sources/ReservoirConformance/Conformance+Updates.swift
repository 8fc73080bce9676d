import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    /// The everyday helpers: update in place, update and delete by request, get by ids,
    /// and watching a record by id.
    static let updateCases: [ConformanceCase] = [
        ConformanceCase("updates", "update by id changes in place; a missing id gives nil") { context in
            try context.store.insertItems(standardItems)
            let changes = ChangeRecorder(context.store)
            defer { changes.cancel() }
            let updated = try context.store.write { tx in try tx.update(Item.self, id: 2) { $0.score = 6; $0.name += "!" } }
            try expectEqual(updated, Item(id: 2, name: "Apple!", score: 6, rank: 2, group: "fruit"), "record returned")
            try expectEqual(try context.store.get(Item.self, id: 2), updated, "record stored")
            try expectEqual(changes.changeSets.count, 1, "change sets after one update")
            try expectEqual(changes.changeSets.last?.changes(to: "conformance_items")?.updated.map(\.id), [.integer(2)], "ids announced as updated")

            var ran = false
            let missing = try context.store.write { tx in try tx.update(Item.self, id: 999) { _ in ran = true } }
            try expectEqual(missing, nil, "update of a missing id")
            try expect(!ran, "the closure does not run for a missing id")
            try expectEqual(try context.store.get(Item.self, id: 999), nil, "no record appears")

            let same = try context.store.write { tx in try tx.update(Item.self, id: 3) { $0.name = "banana" } }
            try expectEqual(same, standardItems[2], "an update that changes nothing returns the record")
            try expectEqual(changes.changeSets.count, 1, "change sets after updates that changed nothing")
        },

        ConformanceCase("updates", "an update closure that changes the id is refused and rolls back") { context in
            try context.store.insertItems(standardItems)
            let error = try expectError(.misuse, "changing the id in update(id:)") {
                try context.store.write { tx in
                    try tx.update(Item.self, id: 1) { $0.name = "kept?" }
                    try tx.update(Item.self, id: 4) { $0.id = 40 }
                }
            }
            try expect(error.message.contains("4") && error.message.contains("40"), "message names both ids: \(error.message)")
            try expectEqual(try context.store.get(Item.self, id: 1), standardItems[0], "the earlier update rolled back")
            try expectError(.misuse, "changing the id in update(matching:)") {
                try context.store.write { tx in try tx.update(matching: FetchRequest<Item>(where: \.rank == 1)) { $0.id += 100 } }
            }
            try expectEqual(try context.store.fetch(Item.self), standardItems, "nothing changed")
        },

        ConformanceCase("updates", "update and delete by request count what they select") { context in
            try context.store.insertItems(standardItems)
            let changes = ChangeRecorder(context.store)
            defer { changes.cancel() }
            let fruit = FetchRequest<Item>(where: \.group == "fruit")
            let count = try context.store.write { tx in
                try tx.update(matching: fruit) { $0.rank = ($0.rank ?? 0) + 10 }
            }
            try expectEqual(count, 4, "records selected (1, 2, 6, 9)")
            let expected = standardItems.map { item -> Item in
                var item = item
                if item.group == "fruit" { item.rank = (item.rank ?? 0) + 10 }
                return item
            }
            try expectEqual(try context.store.fetch(Item.self), expected, "records after update(matching:)")

            let window = FetchRequest<Item>(sortBy: [.descending(\.score)], limit: 2)
            let top = try context.store.fetch(window).map(\.id)
            let windowed = try context.store.write { tx in try tx.update(matching: window) { $0.name = "top" } }
            try expectEqual(windowed, 2, "a limited request selects its window")
            try expectEqual(try context.store.fetch(FetchRequest<Item>(where: \.name == "top")).map(\.id).sorted(), top.sorted(), "records renamed")

            let before = changes.changeSets.count
            let untouched = try context.store.write { tx in try tx.update(matching: fruit) { $0.group = "fruit" } }
            try expectEqual(untouched, 4, "records selected by a change that changes nothing")
            try expectEqual(changes.changeSets.count, before, "no change set for unchanged records")

            let none = try context.store.write { tx in try tx.update(matching: FetchRequest<Item>(where: .never)) { $0.name = "x" } }
            try expectEqual(none, 0, "an empty selection")
            let deleted = try context.store.write { tx in try tx.delete(matching: fruit) }
            try expectEqual(deleted, 4, "records deleted by request")
            try expectEqual(try context.store.count(fruit), 0, "fruit left")
        },

        ConformanceCase("updates", "get by ids keeps their order and leaves out missing ones") { context in
            try context.store.insertItems(standardItems)
            let byID = Dictionary(uniqueKeysWithValues: standardItems.map { ($0.id, $0) })
            let ids = [8, 999, 2, 5, 2, -1]
            let expected = ids.compactMap { byID[$0] }
            try expectEqual(try context.store.get(Item.self, ids: ids), expected, "store.get(ids:)")
            try expectEqual(try context.store.read { try $0.get(Item.self, ids: ids) }, expected, "snapshot.get(ids:)")
            try expectEqual(try context.store.get(Item.self, ids: [Int]()), [], "no ids")
            let seen = try context.store.write { tx -> [Item] in
                try tx.delete(Item.self, id: 8)
                try tx.insert(Item(id: 999, name: "new"))
                return try tx.get(Item.self, ids: ids)
            }
            try expectEqual(seen.map(\.id), [999, 2, 5, 2], "a transaction sees its own writes")
        },

        ConformanceCase("updates", "a record is watched by id before it exists") { context in
            let events = LiveRecorder<(Item?, ChangeType)>()
            let publisher: RecordChangesPublisher<Item> = context.store.publisher(for: Item.self, id: 7)
            publisher.subscribe(events)
            try context.store.insertItems([Item(id: 6, name: "other"), Item(id: 7, name: "seven")])
            try context.store.write { tx in try tx.update(Item.self, id: 7) { $0.rank = 1 } }
            try context.store.write { tx in try tx.update(Item.self, id: 6) { $0.rank = 1 } }
            try context.store.write { tx in try tx.delete(Item.self, id: 7) }
            try expectEqual(events.values.map(\.1), [.inserted, .updated, .deleted], "change types for id 7")
            try expectEqual(events.values.map { $0.0?.rank ?? -1 }, [-1, 1, -1], "ranks seen (nil as -1)")
            try expectEqual(events.values.map { $0.0?.id }, [7, 7, nil], "records seen")
            events.cancel()
        },
    ]
}
