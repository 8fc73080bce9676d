import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    /// Live counts: `countPublisher(for:)`.
    static let countCases: [ConformanceCase] = [
        ConformanceCase("counts", "a live count starts with the count and follows changes to it") { context in
            let fruit = FetchRequest<Item>(where: \.group == "fruit")
            let counts = LiveRecorder<Int>()
            context.store.countPublisher(for: fruit).subscribe(counts)
            try expectEqual(counts.values, [0], "count on attaching to an empty store")
            try context.store.insertItems(standardItems)
            try context.store.write { tx in try tx.update(Item.self, id: 1) { $0.name = "renamed" } }      // still fruit
            try context.store.write { tx in
                try tx.update(Item.self, id: 2) { $0.group = "dessert" }                                  // leaves
                try tx.update(Item.self, id: 3) { $0.group = "fruit" }                                    // joins
            }
            try context.store.write { tx in try tx.insert(AllTypes.sample(1)) }                           // another entity
            try context.store.write { tx in try tx.delete(Item.self, id: 6) }
            try context.store.write { tx in try tx.update(matching: fruit) { $0.group = "gone" } }
            try expectEqual(counts.values, [0, 4, 3, 0], "counts sent (only when the number changed)")
            try expectEqual(counts.values.last, try context.store.count(fruit), "last count equals count(request)")
            counts.cancel()
        },

        ConformanceCase("counts", "a windowed live count agrees with count(request)") { context in
            let window = FetchRequest<Item>(where: \.rank != nil, sortBy: [.ascending(\.rank)], limit: 3, offset: 1)
            let counts = LiveRecorder<Int>()
            context.store.countPublisher(for: window).subscribe(counts)
            var generator = SeededGenerator(seed: 23)
            var expected = [0]
            for step in 0..<40 {
                let id = Int.random(in: 1...8, using: &generator)
                try context.store.write { tx in
                    if Bool.random(using: &generator) {
                        _ = try tx.upsert(Item(id: id, name: "n\(step)", rank: Bool.random(using: &generator) ? nil : Int.random(in: 0...5, using: &generator)))
                    } else {
                        try tx.delete(Item.self, id: id)
                    }
                }
                let now = try context.store.count(window)
                if now != expected.last { expected.append(now) }
            }
            try expectEqual(counts.values, expected, "counts after 40 random commits (seed 23)")
            counts.cancel()
        },

        ConformanceCase("counts", "without demand, a live count sends only a changed latest count") { context in
            let all = FetchRequest<Item>()
            let counts = LiveRecorder<Int>(initialDemand: .max(1))
            context.store.countPublisher(for: all).subscribe(counts)
            try context.store.insertItems([Item(id: 1, name: "a"), Item(id: 2, name: "b")])
            try context.store.write { tx in try tx.delete(Item.self, id: 1) }
            try context.store.write { tx in try tx.delete(Item.self, id: 2) }
            counts.request(.max(1))
            try expectEqual(counts.values, [0], "back to the count last sent: nothing to send")
            try context.store.insertItems([Item(id: 3, name: "c"), Item(id: 4, name: "d")])
            try context.store.write { tx in try tx.delete(Item.self, id: 3) }
            try expectEqual(counts.values, [0, 2], "outstanding demand takes the next change")
            counts.request(.max(1))
            try expectEqual(counts.values, [0, 2, 1], "the latest count when asked")
            counts.cancel()
        },
    ]
}
