import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    static let readOnlyCases: [ConformanceCase] = [
        ConformanceCase("read-only", "mode=readonly reads and observes another store's commits, and refuses writes with .readOnly",
                        requires: [.persistent, .multiProcess, .readOnlyOpening], waiting: { context in
            try context.store.insertItems(standardItems)
            let reader = try context.openAnother(adding: "mode=readonly")
            try expectEqual(try reader.fetch(Item.self).map(\.id), standardItems.map(\.id).sorted(), "a read-only store reads")
            try expectEqual(try reader.fetch(FetchRequest<Item>(where: \.score == 2.5)).map(\.id), [1, 3], "an indexed query")
            let seen = Collected<[Int]>()
            let subscription = reader.objectsPublisher(for: FetchRequest<Item>(where: \.rank >= 3))
                .sink(receiveCompletion: { _ in }, receiveValue: { seen.append($0.map(\.id)) })
            defer { subscription.cancel() }
            try await context.store.write { tx in try tx.insert(Item(id: 50, name: "written by the writable store", rank: 9)) }
            let arrived = await eventually { seen.values.last == [4, 7, 50] }
            try expect(arrived, "the read-only store's subscription follows another store's commit: \(seen.values)")
            let error = try expectError(.readOnly, "a write to a read-only store") {
                try reader.write { tx in try tx.insert(Item(id: 60, name: "refused")) }
            }
            try expect(error.message.contains("read-only") && error.message.contains("mode=readonly"), "the message says why: \(error.message)")
            try expectEqual(try context.store.get(Item.self, id: 60), nil, "nothing was written")
            try expect(try reader.verify().isIntact, "verify works read-only")
        }),
    ]
}
