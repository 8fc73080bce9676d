import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    /// Sectioned live fetches: `sectionedChangesPublisher(for:by:)`.
    static let sectionCases: [ConformanceCase] = [
        ConformanceCase("sections", "random commits: each sectioned change applies to the previous sections") { context in
            for (seed, ascending) in [(UInt64(31), true), (32, false)] {
                try context.store.write { tx in try tx.delete(matching: FetchRequest<Item>()) }
                let request = FetchRequest<Item>(sortBy: [ascending ? .ascending(\.group) : .descending(\.group), .descending(\.score)])
                let recorder = LiveRecorder<SectionedResultsChange<String?, Item>>()
                context.store.sectionedChangesPublisher(for: request, by: \.group).subscribe(recorder)
                var state: [ResultsSection<String?, Item>] = []
                var applied = 0
                func check(_ step: String) throws {
                    for change in recorder.values.dropFirst(applied) {
                        state = try change.applied(to: state)
                        try expectEqual(state, change.sections, "seed \(seed), \(step): applying change #\(applied) gives its sections")
                        applied += 1
                    }
                    try expectEqual(state, try sectioned(context.store.fetch(request)), "seed \(seed), \(step): sections equal a fresh fetch grouped by group")
                }
                try check("initial")
                try expectEqual(recorder.values.count, 1, "seed \(seed): one initial value")
                try context.store.insertItems(standardItems)
                try check("after inserting the standard items")
                var generator = SeededGenerator(seed: seed)
                // "é" twice: precomposed and decomposed, equal as Swift strings but not byte-wise,
                // so they must make two sections.
                let groups: [String?] = [nil, "", "fruit", "Fruit", "dessert", "\u{E9}", "e\u{301}"]
                for step in 0..<60 {
                    try context.store.write { tx in
                        for _ in 0..<Int.random(in: 1...3, using: &generator) {
                            let id = Int.random(in: 1...12, using: &generator)
                            switch Int.random(in: 0..<4, using: &generator) {
                            case 0: try tx.delete(Item.self, id: id)
                            case 1: try tx.update(Item.self, id: id) { $0.score = Double(Int.random(in: -2...2, using: &generator)) }
                            default:
                                let group = groups[Int.random(in: 0..<groups.count, using: &generator)]
                                _ = try tx.upsert(Item(id: id, name: "n\(step)", score: Double(Int.random(in: -2...2, using: &generator)), group: group))
                            }
                        }
                    }
                    try check("step \(step)")
                }
                try expect(recorder.values.count > 30, "seed \(seed): changes sent (\(recorder.values.count))")
                try expect(recorder.values.contains { !$0.insertedSections.isEmpty } && recorder.values.contains { !$0.deletedSections.isEmpty },
                           "seed \(seed): the commits inserted and deleted sections")
                try expect(recorder.values.contains { change in change.moved.contains { $0.old.section != $0.new.section } },
                           "seed \(seed): some record moved between kept sections")
                recorder.cancel()
            }
        },

        ConformanceCase("sections", "without demand, sectioned changes arrive as one") { context in
            try context.store.insertItems(standardItems)
            let request = FetchRequest<Item>(where: \.rank != nil, sortBy: [.ascending(\.group)])
            let recorder = LiveRecorder<SectionedResultsChange<String?, Item>>(initialDemand: .max(1))
            context.store.sectionedChangesPublisher(for: request, by: \.group).subscribe(recorder)
            try context.store.write { tx in try tx.update(Item.self, id: 4) { $0.group = "new" } }
            try context.store.write { tx in try tx.delete(Item.self, id: 5) }
            try context.store.write { tx in try tx.update(Item.self, id: 2) { $0.name = "renamed" } }
            try expectEqual(recorder.values.count, 1, "values while there is no demand")
            recorder.request(.max(1))
            try expectEqual(recorder.values.count, 2, "one coalesced value")
            let state = try recorder.values.reduce([ResultsSection<String?, Item>]()) { try $1.applied(to: $0) }
            try expectEqual(state, try sectioned(context.store.fetch(request)), "applied changes")
            let last = recorder.values[1]
            // Before: "", "Fruit", "dessert", "fruit" (byte order); after: "Fruit", "dessert", "fruit", "new".
            try expectEqual(last.insertedSections, [3], "section \"new\" inserted")
            try expectEqual(last.deletedSections, [0], "section \"\" deleted")
            try expectEqual(last.updated.map(\.new), [.init(section: 2, item: 1)], "id 2 updated in place in \"fruit\"")
            try expectEqual(last.deleted, [.init(section: 2, item: 0)], "id 4 left \"dessert\" for a new section")
            recorder.cancel()
        },

        ConformanceCase("sections", "a section key that is not the first sort key is refused, naming both") { context in
            try context.store.insertItems(standardItems)
            let cases: [(FetchRequest<Item>, [String])] = [
                (FetchRequest(sortBy: [.ascending(\.score), .ascending(\.group)]), ["group", "score"]),
                (FetchRequest(), ["group", "id"]),
            ]
            for (request, names) in cases {
                let recorder = LiveRecorder<SectionedResultsChange<String?, Item>>()
                context.store.sectionedChangesPublisher(for: request, by: \.group).subscribe(recorder)
                try expectEqual(recorder.values.count, 0, "values for a refused section key")
                guard case let .failure(error as ReservoirError) = recorder.completion else {
                    throw ConformanceFailure(message: "expected a ReservoirError failure, got \(String(describing: recorder.completion))", file: #fileID, line: #line)
                }
                try expectEqual(error.code, .invalidQuery, "error code")
                for name in names {
                    try expect(error.message.contains(name), "message names \(name): \(error.message)")
                }
            }
            let unnamed = LiveRecorder<SectionedResultsChange<String, Item>>()
            context.store.sectionedChangesPublisher(for: FetchRequest<Item>(sortBy: [.ascending(\.group)]), by: \.note).subscribe(unnamed)
            guard case let .failure(error as ReservoirError) = unnamed.completion, error.message.contains("note") else {
                throw ConformanceFailure(message: "a key path the schema does not name: expected an error naming it, got \(String(describing: unnamed.completion))", file: #fileID, line: #line)
            }
        },
    ]
}

/// Items in runs of equal stored `group` values (byte-wise, as the contract compares text).
func sectioned(_ items: [Item]) throws -> [ResultsSection<String?, Item>] {
    var sections: [ResultsSection<String?, Item>] = []
    var current: (value: Value, key: String?, records: [Item])?
    for item in items {
        let value = try item.group.toValue()
        if let run = current, run.value == value {
            current?.records.append(item)
        } else {
            if let run = current { sections.append(ResultsSection(key: run.key, records: run.records)) }
            current = (value, item.group, [item])
        }
    }
    if let run = current { sections.append(ResultsSection(key: run.key, records: run.records)) }
    return sections
}
