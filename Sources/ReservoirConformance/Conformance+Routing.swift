import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    /// Routing and sharing: a commit reaches only the live fetches it can affect, and
    /// identical fetches share one result, yet every subscription ends where a fresh fetch is.
    static let routingCases: [ConformanceCase] = [
        ConformanceCase("routing", "many distinct and identical live fetches follow random moves between groups, deletes and inserts") { context in
            // Keyed by rank (one per rank), keyed by group under an AND, an IN list, a range,
            // and an unkeyable shape (OR), several of them subscribed more than once.
            var requests: [FetchRequest<Item>] = []
            for rank in 0..<12 { requests.append(FetchRequest<Item>(where: \.rank == rank, sortBy: [.ascending(\.name)])) }
            for group in 0..<6 { requests.append(FetchRequest<Item>(where: \.group == "g\(group)" && \.score != nil, sortBy: [.descending(\.score)])) }
            requests.append(FetchRequest<Item>(where: .isIn(\.rank, [Int?]([1, 3, 5])), sortBy: [.ascending(\.id)]))
            requests.append(FetchRequest<Item>(where: \.rank == 2 || \.group == "g1", sortBy: [.ascending(\.name)]))
            requests.append(FetchRequest<Item>(where: \.rank > 8, sortBy: [.ascending(\.rank)], limit: 4))
            let identical = [0, 0, 0, 12, 12, 18, 19, 20]  // indexes subscribed again
            let recorders = (requests.indices + identical).map { index in (index, LiveRecorder<CollectionDifference<Item>>()) }
            // One subscriber to a shared request without demand, to check its coalesced value later.
            let slow = LiveRecorder<CollectionDifference<Item>>(initialDemand: .max(1))

            var generator = SeededGenerator(seed: 41)
            func randomItem(_ id: Int, _ step: Int) -> Item {
                Item(id: id, name: "n\(Int.random(in: 0...20, using: &generator))", score: Bool.random(using: &generator) ? nil : Double(Int.random(in: 0...9, using: &generator)),
                     rank: Int.random(in: 0...13, using: &generator), group: "g\(Int.random(in: 0...6, using: &generator))")
            }
            try context.store.write { tx in for id in 1...40 { try tx.insert(randomItem(id, 0)) } }
            for (index, recorder) in recorders { context.store.differencesPublisher(for: requests[index]).subscribe(recorder) }
            context.store.differencesPublisher(for: requests[0]).subscribe(slow)

            for step in 1...80 {
                try context.store.write { tx in
                    for _ in 0..<Int.random(in: 1...3, using: &generator) {
                        let id = Int.random(in: 1...60, using: &generator)
                        switch Int.random(in: 0...3, using: &generator) {
                        case 0: try tx.delete(Item.self, id: id)
                        default: _ = try tx.upsert(randomItem(id, step))  // an insert, or an update that may move groups
                        }
                    }
                }
            }
            for (index, recorder) in recorders {
                try expectEqual(recorder.applied, try context.store.fetch(requests[index]), "subscription to \(requests[index]) after 80 random commits (seed 41)")
                try expect(recorder.completion == nil, "subscription to \(requests[index]) still live")
            }
            try expectEqual(slow.values.count, 1, "values the subscriber without demand received")
            slow.request(.max(1))
            try expectEqual(slow.applied, try context.store.fetch(requests[0]), "coalesced value of the subscriber without demand")
            try expectEqual(slow.values.count, 2, "one coalesced value")
            // Cancelling some subscribers of a shared result leaves the others updated.
            for (_, recorder) in recorders.prefix(1) { recorder.cancel() }
            try context.store.write { tx in _ = try tx.upsert(Item(id: 61, name: "late", rank: 0, group: "g0")) }
            for (index, recorder) in recorders.dropFirst() {
                try expectEqual(recorder.applied, try context.store.fetch(requests[index]), "subscription to \(requests[index]) after another cancelled")
            }
            for (_, recorder) in recorders.dropFirst() { recorder.cancel() }
            slow.cancel()
        },
        ConformanceCase("routing", "range routes admit exactly their bounds: inclusive and exclusive ends, both ends, text and mixed numbers, null") { context in
            let requests: [FetchRequest<Item>] = [
                FetchRequest(where: \.rank > 3, sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.rank >= 3, sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.rank < 5, sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.rank <= 5, sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.rank >= 3 && \.rank < 5, sortBy: [.descending(\.name)]),
                FetchRequest(where: \.rank > 3 && \.rank <= 5 && \.name != "x", sortBy: [.ascending(\.id)], limit: 2),
                FetchRequest(where: \.score > 2, sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.group >= "g2" && \.group < "g4", sortBy: [.ascending(\.id)]),
            ]
            let recorders = recordAll(requests, on: context.store)
            // Each step moves record 1 (and sometimes 2) across a boundary of some range.
            let steps: [(rank: Int?, score: Double?, group: String?)] = [
                (3, 2.0, "g2"), (4, 2.5, "g3"), (5, 2.0000001, "g4"), (2, 1.5, "g1"), (nil, nil, nil),
                (6, 3, "g3z"), (3, 2, "g2"), (5, 9, "g4"), (4, 2.1, "g3"),
            ]
            func checkAll(_ what: String) throws { try expectCurrent(recorders, requests, on: context.store, what) }
            try checkAll("before any commit")
            for (step, values) in steps.enumerated() {
                try context.store.write { tx in
                    _ = try tx.upsert(Item(id: 1, name: "a\(step)", score: values.score, rank: values.rank, group: values.group))
                    if step % 3 == 0 { _ = try tx.upsert(Item(id: 2, name: "b\(step)", score: values.score.map { $0 + 1 }, rank: values.rank.map { $0 + 1 }, group: "g3")) }
                }
                try checkAll("after step \(step), record 1 at rank \(String(describing: values.rank)), score \(String(describing: values.score)), group \(String(describing: values.group))")
            }
            try context.store.write { tx in try tx.delete(Item.self, id: 1) }
            try checkAll("after record 1 was deleted")
            for recorder in recorders { recorder.cancel() }
        },
        ConformanceCase("routing", "a record moving between groups reaches both groups' live fetches, a delete reaches its holders, and an offset window shifts when a record it skips leaves") { context in
            try context.store.write { tx in
                for id in 1...6 { try tx.insert(Item(id: id, name: "n\(id)", rank: id <= 3 ? 1 : 2, group: id <= 3 ? "g1" : "g2")) }
            }
            let requests: [FetchRequest<Item>] = [
                FetchRequest(where: \.group == "g1", sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.group == "g2", sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.rank == 1, sortBy: [.ascending(\.id)], offset: 1),
                FetchRequest(where: \.rank >= 1 && \.rank < 2, sortBy: [.ascending(\.id)], offset: 1),
            ]
            let recorders = recordAll(requests, on: context.store)
            func checkAll(_ what: String) throws { try expectCurrent(recorders, requests, on: context.store, what) }
            // Record 1 is the record the offset windows skip: moving it out shifts them.
            try context.store.write { tx in try tx.update(Item(id: 1, name: "n1", rank: 2, group: "g2")) }
            try checkAll("after record 1 moved from g1/rank 1 to g2/rank 2")
            try context.store.write { tx in try tx.update(Item(id: 5, name: "n5", rank: 1, group: "g1")) }
            try checkAll("after record 5 moved from g2/rank 2 to g1/rank 1")
            try context.store.write { tx in try tx.delete(Item.self, id: 2) }
            try checkAll("after record 2 (g1, skipped by the offset windows) was deleted")
            try context.store.write { tx in try tx.delete(Item.self, id: 4) }
            try checkAll("after record 4 (g2) was deleted")
            for recorder in recorders { recorder.cancel() }
        },
        ConformanceCase("routing", "distinct live fetches holding the same records all see a record's new version, including one that coalesces and one that joins later") { context in
            try context.store.write { tx in
                for id in 1...20 { try tx.insert(Item(id: id, name: "n\(id)", score: Double(id), rank: id % 4, group: "g\(id % 3)")) }
            }
            // Overlapping ranges and different sort orders over the same records.
            let requests: [FetchRequest<Item>] = [
                FetchRequest(where: \.score >= 1, sortBy: [.ascending(\.id)]),
                FetchRequest(where: \.score >= 5, sortBy: [.descending(\.name)]),
                FetchRequest(where: \.score < 15, sortBy: [.ascending(\.rank)]),
                FetchRequest(sortBy: [.descending(\.score)]),
            ]
            let recorders = recordAll(requests, on: context.store)
            let slow = LiveRecorder<CollectionDifference<Item>>(initialDemand: .max(1))
            context.store.differencesPublisher(for: FetchRequest<Item>(where: \.score > 0, sortBy: [.ascending(\.name)])).subscribe(slow)
            try context.store.write { tx in try tx.update(Item(id: 10, name: "renamed", score: 10, rank: 2, group: "g1")) }
            try context.store.write { tx in try tx.update(Item(id: 10, name: "renamed again", score: 11, rank: 3, group: "g1")) }
            let late = LiveRecorder<CollectionDifference<Item>>()
            context.store.differencesPublisher(for: FetchRequest<Item>(where: \.score >= 2, sortBy: [.ascending(\.score)])).subscribe(late)
            // Back to the first version: a fetch must not be handed a stale copy of it.
            try context.store.write { tx in try tx.update(Item(id: 10, name: "n10", score: 10, rank: 2, group: "g1")) }
            for (request, recorder) in zip(requests, recorders) {
                try expectEqual(recorder.applied, try context.store.fetch(request), "subscription to \(request) after record 10 changed three times")
                try expect(recorder.applied.contains { $0.id == 10 && $0.name == "n10" && $0.rank == 2 }, "subscription to \(request) holds record 10's newest version")
            }
            try expectEqual(late.applied, try context.store.fetch(FetchRequest<Item>(where: \.score >= 2, sortBy: [.ascending(\.score)])), "the subscription that joined after two changes")
            slow.request(.max(1))
            try expectEqual(slow.applied, try context.store.fetch(FetchRequest<Item>(where: \.score > 0, sortBy: [.ascending(\.name)])), "the coalesced subscription")
            for recorder in recorders + [late, slow] { recorder.cancel() }
        },
    ]
}

/// A recorder subscribed to the live differences of each of `requests`.
private func recordAll(_ requests: [FetchRequest<Item>], on store: Store) -> [LiveRecorder<CollectionDifference<Item>>] {
    requests.map { request in
        let recorder = LiveRecorder<CollectionDifference<Item>>()
        store.differencesPublisher(for: request).subscribe(recorder)
        return recorder
    }
}

/// Checks that each recorder's differences, applied, give what a fresh fetch of its request does.
private func expectCurrent(_ recorders: [LiveRecorder<CollectionDifference<Item>>], _ requests: [FetchRequest<Item>], on store: Store, _ what: String) throws {
    for (request, recorder) in zip(requests, recorders) {
        try expectEqual(recorder.applied, try store.fetch(request), "subscription to \(request) \(what)")
    }
}
