import Foundation
import OpenCombineShim
import Reservoir

// Requests written with Foundation's `#Predicate` and `SortDescriptor` are translated into the
// library's own predicate tree, so they must answer exactly as the operator form does, on
// every backend, in fetches, counts, writes and live streams.

/// One request written both ways, with a label for failures.
private struct BothWays: Sendable {
    let label: String
    let operators: FetchRequest<Item>
    let foundation: FetchRequest<Item>
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
private func pairs() -> [BothWays] {
    let fruit = "fruit"
    let top = 2
    let lowest = Int.min
    let ranks: [Int?] = [1, 3, nil]
    return [
        BothWays(label: "group == fruit, by score descending",
                 operators: FetchRequest(where: \.group == "fruit", sortBy: [.descending(\.score)]),
                 foundation: FetchRequest(#Predicate { $0.group == fruit }, sortBy: [SortDescriptor(\.score, order: .reverse)])),
        BothWays(label: "score == nil",
                 operators: FetchRequest(where: \.score == nil),
                 foundation: FetchRequest(#Predicate { $0.score == nil })),
        BothWays(label: "score != 2.5 (keeps nulls)",
                 operators: FetchRequest(where: \.score != 2.5),
                 foundation: FetchRequest(#Predicate { $0.score != 2.5 })),
        BothWays(label: "1 <= rank < 5 through ??",
                 operators: FetchRequest(where: \.rank >= 1 && \.rank < 5, sortBy: [.ascending(\.rank)]),
                 foundation: FetchRequest(#Predicate { ($0.rank ?? 0) >= 1 && ($0.rank ?? 0) < 5 }, sortBy: [SortDescriptor(\.rank)])),
        BothWays(label: "rank in (1, 3, nil)",
                 operators: FetchRequest(where: .isIn(\.rank, [1, 3, nil])),
                 foundation: FetchRequest(#Predicate { ranks.contains($0.rank) })),
        BothWays(label: "name starts with apple, or contains an",
                 operators: FetchRequest(where: .hasPrefix(\.name, "apple") || .contains(\.name, "an"), sortBy: [.ascending(\.name)]),
                 foundation: FetchRequest(#Predicate { $0.name.starts(with: "apple") || $0.name.contains("an") }, sortBy: [SortDescriptor(\.name)])),
        BothWays(label: "group?.starts(with: f) == true (null never matches)",
                 operators: FetchRequest(where: \.group != nil && .hasPrefix(\.group, "f")),
                 foundation: FetchRequest(#Predicate { $0.group?.starts(with: "f") == true })),
        BothWays(label: "name > Banana split (bytes), a window",
                 operators: FetchRequest(where: \.name > "Banana split", sortBy: [.descending(\.name)], limit: 3, offset: 1),
                 foundation: FetchRequest(#Predicate { "Banana split" < $0.name }, sortBy: [SortDescriptor(\.name, order: .reverse)], limit: 3, offset: 1)),
        BothWays(label: "not (id == 1 or rank > top + 1)",
                 operators: FetchRequest(where: !(\.id == 1 || \.rank > 3)),
                 foundation: FetchRequest(#Predicate { !($0.id == 1 || ($0.rank ?? lowest) > top + 1) })),
    ]
}

extension ConformanceSuite {
    static let foundationPredicateCases: [ConformanceCase] = [
        ConformanceCase("foundation predicates", "the same requests written both ways return the same records") { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
            try context.store.insertItems(standardItems)
            for pair in pairs() {
                let expected = try context.store.fetch(pair.operators)
                try expect(!expected.isEmpty, "\(pair.label): the operator form selects something")
                try expectEqual(try context.store.fetch(pair.foundation), expected, pair.label)
                try expectEqual(try context.store.count(pair.foundation), try context.store.count(pair.operators), "count of \(pair.label)")
            }
        },

        ConformanceCase("foundation predicates", "live streams are identical both ways") { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
            try context.store.insertItems(standardItems)
            var recorders: [(BothWays, LiveRecorder<CollectionDifference<Item>>, LiveRecorder<CollectionDifference<Item>>)] = []
            for pair in pairs() {
                let operators = LiveRecorder<CollectionDifference<Item>>()
                let foundation = LiveRecorder<CollectionDifference<Item>>()
                context.store.differencesPublisher(for: pair.operators).subscribe(operators)
                context.store.differencesPublisher(for: pair.foundation).subscribe(foundation)
                recorders.append((pair, operators, foundation))
            }
            try context.store.write { tx in
                try tx.insert(Item(id: 20, name: "apricot", score: nil, rank: 3, group: "fruit"))
                try tx.insert(Item(id: 21, name: "Zucchini", score: 4, rank: nil, group: nil))
            }
            try context.store.write { tx in try tx.update(Item(id: 1, name: "apple", score: nil, rank: 4, group: "fresh")) }
            try context.store.write { tx in _ = try tx.delete(Item.self, id: 3) }
            try context.store.write { tx in try tx.update(Item(id: 8, name: "banana bread", score: 2.5, rank: 1, group: "fruit")) }
            for (pair, operators, foundation) in recorders {
                try expect(operators.values.count > 1, "\(pair.label): the writes change the operator form's results")
                try expectEqual(foundation.values, operators.values, "live stream of \(pair.label)")
                try expectEqual(foundation.applied, try context.store.fetch(pair.operators), "applied stream of \(pair.label)")
                operators.cancel()
                foundation.cancel()
            }
        },

        ConformanceCase("foundation predicates", "update(matching:), delete(matching:) and live counts take them") { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
            try context.store.insertItems(standardItems)
            let counts = LiveRecorder<Int>()
            context.store.countPublisher(for: FetchRequest(#Predicate<Item> { $0.group == "fruit" })).subscribe(counts)
            let updated = try context.store.write { tx in
                try tx.update(matching: FetchRequest(#Predicate<Item> { $0.group == "dessert" })) { $0.group = "fruit" }
            }
            try expectEqual(updated, 2, "records updated (4, 7)")
            try expectEqual(try context.store.ids(FetchRequest(where: \.group == "fruit")), [1, 2, 4, 6, 7, 9], "fruit after the update")
            let deleted = try context.store.write { tx in
                try tx.delete(matching: FetchRequest(#Predicate<Item> { ($0.rank ?? 0) >= 2 }))
            }
            try expectEqual(deleted, 3, "records deleted (2, 4, 7)")
            try expectEqual(try context.store.ids(FetchRequest()), [1, 3, 5, 6, 8, 9], "remaining ids")
            try expectEqual(counts.values, [4, 6, 3], "live count of fruit")
            counts.cancel()
        },
    ]
}
