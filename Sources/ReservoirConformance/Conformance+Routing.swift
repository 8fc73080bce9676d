import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    /// Routing and sharing: a commit reaches only the live fetches it can affect, and
    /// identical fetches share one result, yet every subscription ends where a fresh fetch is.
    static let routingCases: [ConformanceCase] = [
        ConformanceCase("routing", "many distinct and identical live fetches follow random moves between groups, deletes and inserts") { context in
            // Keyed by rank (one per rank), keyed by group under an AND, an IN list, and
            // unkeyable shapes (OR, a range), several of them subscribed more than once.
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
    ]
}
