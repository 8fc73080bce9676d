import Foundation
import Reservoir

extension ConformanceSuite {
    static let crudCases: [ConformanceCase] = [
        ConformanceCase("crud", "insert then get and fetch") { context in
            try context.store.insertItems(standardItems)
            for item in standardItems {
                try expectEqual(try context.store.get(Item.self, id: item.id), item, "get(\(item.id))")
            }
            try expectEqual(try context.store.fetch(Item.self), standardItems.sorted { $0.id < $1.id }, "fetch all (id order)")
            try expectEqual(try context.store.get(Item.self, id: 999), nil, "get of a missing id")
        },

        // More records than a fetch collects before it moves them into a growing array (the
        // core's per-thread block, used where a backend does not announce the count), in each
        // of the orders and windows a fetch can ask for.
        ConformanceCase("crud", "a fetch of a thousand records returns each once, in order") { context in
            let items = (1...1_000).map { Item(id: $0, name: "item \($0)", score: Double($0 % 7), rank: ($0 * 37) % 1_000, group: $0 % 5 == 0 ? "fifth" : nil) }
            try context.store.insertItems(items)
            try expectEqual(try context.store.fetch(Item.self), items, "fetch all (id order)")
            let byRank = items.sorted { ($0.rank ?? 0, $0.id) < ($1.rank ?? 0, $1.id) }
            try expectEqual(try context.store.ids(FetchRequest(sortBy: [.ascending(\.rank), .ascending(\.id)])), byRank.map(\.id), "sorted by rank")
            try expectEqual(try context.store.ids(FetchRequest(sortBy: [.descending(\.id)], limit: 700, offset: 50)),
                            Array((251...950).reversed()), "limit 700, offset 50, descending")
            try expectEqual(try context.store.ids(FetchRequest(where: \.group == "fifth")), Array(stride(from: 5, through: 1_000, by: 5)), "every fifth")
        },

        ConformanceCase("crud", "insert of an existing id is rejected") { context in
            try context.store.insertItems([Item(id: 1, name: "first")])
            let error = try expectError(.duplicateID, "second insert of id 1") {
                try context.store.write { tx in try tx.insert(Item(id: 1, name: "second")) }
            }
            try expect(error.message.contains("1"), "message names the id: \(error.message)")
            try expectEqual(try context.store.get(Item.self, id: 1)?.name, "first", "record after the rejected insert")
        },

        ConformanceCase("crud", "update replaces and rejects a missing id") { context in
            try context.store.insertItems([Item(id: 1, name: "old", score: 1, rank: 1, group: "g")])
            try context.store.write { tx in try tx.update(Item(id: 1, name: "new", score: nil, rank: 2, group: nil)) }
            try expectEqual(try context.store.get(Item.self, id: 1), Item(id: 1, name: "new", score: nil, rank: 2, group: nil), "after update")
            try expectError(.notFound, "update of missing id 2") {
                try context.store.write { tx in try tx.update(Item(id: 2, name: "ghost")) }
            }
            try expectEqual(try context.store.get(Item.self, id: 2), nil, "no record appears after a failed update")
        },

        ConformanceCase("crud", "upsert inserts, updates, and reports identical writes") { context in
            let outcomes = try context.store.write { tx -> [ChangeType?] in
                [try tx.upsert(Item(id: 1, name: "a")), try tx.upsert(Item(id: 1, name: "b")), try tx.upsert(Item(id: 1, name: "b"))]
            }
            try expectEqual(outcomes, [.inserted, .updated, nil], "upsert outcomes")
            try expectEqual(try context.store.get(Item.self, id: 1)?.name, "b", "after upserts")
        },

        ConformanceCase("crud", "delete by id, by record and by request") { context in
            try context.store.insertItems(standardItems)
            let results = try context.store.write { tx -> [Bool] in
                [try tx.delete(Item.self, id: 1), try tx.delete(standardItems[1]), try tx.delete(Item.self, id: 999)]
            }
            try expectEqual(results, [true, true, false], "delete results")
            let removed = try context.store.write { tx in try tx.delete(FetchRequest<Item>(where: \.group == "fruit")) }
            try expectEqual(removed, 2, "records deleted by request (6, 9)")
            try expectEqual(try context.store.ids(FetchRequest()), [3, 4, 5, 7, 8], "remaining ids")
        },

        ConformanceCase("crud", "count agrees with fetch") { context in
            try context.store.insertItems(standardItems)
            let requests: [FetchRequest<Item>] = [
                FetchRequest(), FetchRequest(where: \.score == nil), FetchRequest(where: \.rank > 0, limit: 2),
                FetchRequest(offset: 7), FetchRequest(where: .never),
            ]
            for (i, request) in requests.enumerated() {
                try expectEqual(try context.store.count(request), try context.store.fetch(request).count, "count of request #\(i)")
            }
        },

        ConformanceCase("crud", "an entity never written is empty") { context in
            try expectEqual(try context.store.fetch(Item.self), [], "fetch")
            try expectEqual(try context.store.count(FetchRequest<Item>(where: \.rank > 1)), 0, "count")
            try expectEqual(try context.store.get(Item.self, id: 1), nil, "get")
        },

        ConformanceCase("crud", "entities lists what was written") { context in
            try context.store.insertItems([Item(id: 1, name: "x")])
            try context.store.write { tx in try tx.insert(AllTypes.sample(1)) }
            let names = try context.store.read { try $0.entities() }.map(\.name)
            try expect(names.contains("conformance_items") && names.contains("conformance_all_types"), "entities: \(names)")
            let items = try context.store.read { try $0.entities() }.first { $0.name == "conformance_items" }
            try expectEqual(items?.idColumn, "id", "id column of conformance_items")
        },

        ConformanceCase("crud", "a key path the schema does not name is an error") { context in
            try context.store.insertItems([Item(id: 1, name: "x", note: "n")])
            let error = try expectError(.invalidQuery, "predicate on \\Item.note") {
                try context.store.fetch(FetchRequest<Item>(where: \.note == "n"))
            }
            try expect(error.message.contains("note"), "message names the key path: \(error.message)")
            try expectError(.invalidQuery, "sort on \\Item.note") {
                try context.store.fetch(FetchRequest<Item>(sortBy: [.ascending(\.note)]))
            }
        },
    ]
}
