import Foundation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    static let liveFetchCases: [ConformanceCase] = [
        ConformanceCase("live fetch", "nothing is fetched before a subscriber attaches") { context in
            let request = FetchRequest<Item>(sortBy: [.ascending(\.rank)])
            let publisher = context.store.differencesPublisher(for: request)
            try context.store.insertItems(standardItems)
            let recorder = LiveRecorder<CollectionDifference<Item>>()
            publisher.subscribe(recorder)
            try expectEqual(recorder.values.count, 1, "values on attaching")
            try expectEqual(recorder.applied, try context.store.fetch(request), "first value")
            try expect(recorder.values.first?.removals.isEmpty ?? false, "the first value only inserts")
            recorder.cancel()
        },

        ConformanceCase("live fetch", "each subscriber gets its own results, late ones included") { context in
            let request = FetchRequest<Item>(where: \.group == "fruit", sortBy: [.descending(\.score)])
            let early = LiveRecorder<CollectionDifference<Item>>()
            context.store.differencesPublisher(for: request).subscribe(early)
            try context.store.insertItems(standardItems)
            let late = LiveRecorder<CollectionDifference<Item>>()
            context.store.differencesPublisher(for: request).subscribe(late)
            try context.store.write { tx in try tx.update(Item(id: 1, name: "apple", score: 99, rank: 1, group: "fruit")) }
            let expected = try context.store.fetch(request)
            try expectEqual(early.applied, expected, "early subscriber")
            try expectEqual(late.applied, expected, "late subscriber")
            try expectEqual(early.values.count, 3, "early: empty start, insert commit, update commit")
            try expectEqual(late.values.count, 2, "late: current state, update commit")
            early.cancel()
            late.cancel()
        },

        ConformanceCase("live fetch", "commits that do not change the result send nothing") { context in
            try context.store.insertItems(standardItems)
            let request = FetchRequest<Item>(where: \.rank >= 2, sortBy: [.ascending(\.rank)])
            let recorder = LiveRecorder<CollectionDifference<Item>>()
            context.store.differencesPublisher(for: request).subscribe(recorder)
            try context.store.write { tx in try tx.insert(AllTypes.sample(1)) }                          // another entity
            try context.store.write { tx in try tx.insert(Item(id: 50, name: "low", rank: 0)) }          // does not match
            try context.store.write { tx in try tx.update(Item(id: 1, name: "still low", rank: 1)) }     // stays out
            try context.store.write { tx in _ = try tx.upsert(standardItems[3]) }                        // identical
            try context.store.write { _ in }
            try expectEqual(recorder.values.count, 1, "values (initial only)")
            try context.store.write { tx in try tx.update(Item(id: 4, name: "Banana split", score: -1, rank: 9, group: "dessert")) }
            try expectEqual(recorder.values.count, 2, "values after a matching change")
            try expect(!(recorder.values.last?.isEmpty ?? true), "no empty difference is sent")
            try expectEqual(recorder.applied, try context.store.fetch(request), "applied differences")
            recorder.cancel()
        },

        ConformanceCase("live fetch", "without demand, changes arrive as one coalesced difference") { context in
            try context.store.insertItems(standardItems)
            let request = FetchRequest<Item>(sortBy: [.descending(\.rank)])
            let recorder = LiveRecorder<CollectionDifference<Item>>(initialDemand: .max(1))
            context.store.differencesPublisher(for: request).subscribe(recorder)
            try expectEqual(recorder.values.count, 1, "initial value")
            try context.store.write { tx in try tx.insert(Item(id: 20, name: "new", rank: 4)) }
            try context.store.write { tx in try tx.delete(Item.self, id: 1) }
            try context.store.write { tx in try tx.update(Item(id: 20, name: "newer", rank: 100)) }
            try context.store.write { tx in try tx.delete(Item.self, id: 20) }
            try context.store.write { tx in try tx.update(Item(id: 3, name: "banana", score: 2.5, rank: 7)) }
            try expectEqual(recorder.values.count, 1, "values while there is no demand")
            recorder.request(.max(1))
            try expectEqual(recorder.values.count, 2, "one coalesced value")
            try expectEqual(recorder.applied, try context.store.fetch(request), "applied differences")
            try expect(!(recorder.values.last?.contains { if case let .insert(_, item, _) = $0 { return item.id == 20 } else { return false } } ?? true),
                       "a record inserted and deleted while waiting never appears")
            recorder.request(.max(1))
            try expectEqual(recorder.values.count, 2, "demand with nothing new sends nothing")
            try context.store.write { tx in try tx.insert(Item(id: 21, name: "later", rank: 1)) }
            try expectEqual(recorder.values.count, 3, "outstanding demand is used by the next change")
            try expectEqual(recorder.applied, try context.store.fetch(request), "applied differences at the end")
            recorder.cancel()
        },

        ConformanceCase("live fetch", "demand returned from receive is honoured") { context in
            let request = FetchRequest<Item>()
            let recorder = LiveRecorder<CollectionDifference<Item>>(initialDemand: .max(1), demandPerValue: .max(1))
            context.store.differencesPublisher(for: request).subscribe(recorder)
            for i in 1...4 { try context.store.write { tx in try tx.insert(Item(id: i, name: "n\(i)")) } }
            try expectEqual(recorder.values.count, 5, "initial value plus one per commit")
            try expectEqual(recorder.applied, try context.store.fetch(request), "applied differences")
            recorder.cancel()
        },

        ConformanceCase("live fetch", "a failing fetch completes with the error") { context in
            let recorder = LiveRecorder<CollectionDifference<Item>>()
            context.store.differencesPublisher(for: FetchRequest<Item>(where: \.note == "x")).subscribe(recorder)
            guard case let .failure(error)? = recorder.completion else {
                throw ConformanceFailure(message: "expected a failure completion, got \(String(describing: recorder.completion)) and \(recorder.values.count) values", file: #fileID, line: #line)
            }
            try expectEqual((error as? ReservoirError)?.code, .invalidQuery, "the error's code")
            try context.store.insertItems([Item(id: 1, name: "after")])
            try expectEqual(recorder.values.count, 0, "values after the failure")
        },

        ConformanceCase("live fetch", "after cancel nothing is sent and the subscription is released") { context in
            let recorder = LiveRecorder<CollectionDifference<Item>>()
            weak var released: AnyObject?
            do {
                let request = FetchRequest<Item>()
                context.store.differencesPublisher(for: request).subscribe(recorder)
                released = recorder.currentSubscription
                try context.store.insertItems([Item(id: 1, name: "one")])
                recorder.cancel()
            }
            try context.store.insertItems([Item(id: 2, name: "two")])
            try expectEqual(recorder.values.count, 2, "values: initial and the one commit before cancel")
            try expect(released == nil, "the cancelled subscription was released")
        },

        ConformanceCase("live fetch", "a subscriber may write or cancel from inside receive") { context in
            try context.store.insertItems([Item(id: 1, name: "one", rank: 1)])
            let request = FetchRequest<Item>(sortBy: [.ascending(\.rank)])
            let writer = LiveRecorder<CollectionDifference<Item>>()
            writer.reaction = { _, recorder in
                // The first value triggers a write; that write's difference must still arrive, once.
                if recorder.values.count == 1 {
                    try? context.store.write { tx in try tx.insert(Item(id: 2, name: "two", rank: 2)) }
                }
            }
            context.store.differencesPublisher(for: request).subscribe(writer)
            try expectEqual(writer.values.count, 2, "values: initial and the re-entrant write's")
            try expectEqual(writer.applied, try context.store.fetch(request), "applied differences")
            let canceller = LiveRecorder<CollectionDifference<Item>>()
            canceller.reaction = { _, recorder in if recorder.values.count == 2 { recorder.cancel() } }
            context.store.differencesPublisher(for: request).subscribe(canceller)
            try context.store.insertItems([Item(id: 3, name: "three", rank: 3)])
            try context.store.insertItems([Item(id: 4, name: "four", rank: 4)])
            try expectEqual(canceller.values.count, 2, "values before cancelling inside receive")
            writer.cancel()
        },

        ConformanceCase("live fetch", "limit and offset windows stay exact") { context in
            try context.store.insertItems((1...12).map { Item(id: $0, name: "n\($0)", rank: $0 * 10) })
            let requests: [(String, FetchRequest<Item>)] = [
                ("limit 3", FetchRequest(sortBy: [.ascending(\.rank)], limit: 3)),
                ("limit 3 desc", FetchRequest(sortBy: [.descending(\.rank)], limit: 3)),
                ("limit 3 offset 2", FetchRequest(sortBy: [.ascending(\.rank)], limit: 3, offset: 2)),
                ("offset 10", FetchRequest(sortBy: [.ascending(\.rank)], offset: 10)),
                ("limit 20 (not full)", FetchRequest(where: \.rank < 1000, sortBy: [.ascending(\.rank)], limit: 20)),
            ]
            let recorders = requests.map { label, request in
                let recorder = LiveRecorder<CollectionDifference<Item>>()
                context.store.differencesPublisher(for: request).subscribe(recorder)
                return (label, request, recorder)
            }
            let steps: [(Transaction) throws -> Void] = [
                { try $0.delete(Item.self, id: 1) },                                        // a member leaves
                { try $0.insert(Item(id: 100, name: "first", rank: 5)) },                   // sorts before everything
                { try $0.update(Item(id: 2, name: "n2", rank: 1000)) },                     // a member moves out
                { try $0.insert(Item(id: 101, name: "last", rank: 10_000)) },               // sorts after the window
                { try $0.update(Item(id: 3, name: "renamed", rank: 30)) },                  // changes in place
                { tx in for id in 4...8 { try tx.delete(Item.self, id: id) } },              // many leave at once
                { tx in for id in 200...205 { try tx.insert(Item(id: id, name: "b\(id)", rank: id - 190)) } },
            ]
            for (i, step) in steps.enumerated() {
                try context.store.write(step)
                for (label, request, recorder) in recorders {
                    try expectEqual(recorder.applied, try context.store.fetch(request), "\(label) after step \(i + 1)")
                }
            }
            for (_, _, recorder) in recorders { recorder.cancel() }
        },

        ConformanceCase("live fetch", "random commits: applied differences equal a fresh fetch") { context in
            var random = SeededGenerator(seed: 0x5EED_0003)
            let requests: [FetchRequest<Item>] = [
                FetchRequest(),
                FetchRequest(where: \.group == "a" || \.rank > 5, sortBy: [.descending(\.rank), .ascending(\.name)]),
                FetchRequest(where: \.score != nil, sortBy: [.ascending(\.score)], limit: 4),
                FetchRequest(sortBy: [.ascending(\.group)], limit: 5, offset: 3),
            ]
            // Unlimited demand, and demand that comes only now and then.
            let eager = requests.map { request in
                let recorder = LiveRecorder<CollectionDifference<Item>>()
                context.store.differencesPublisher(for: request).subscribe(recorder)
                return recorder
            }
            let lazy = requests.map { request in
                let recorder = LiveRecorder<CollectionDifference<Item>>(initialDemand: .max(1))
                context.store.differencesPublisher(for: request).subscribe(recorder)
                return recorder
            }
            for round in 0..<150 {
                try randomCommit(context.store, using: &random)
                for (r, request) in requests.enumerated() {
                    let expected = try context.store.fetch(request)
                    try expectEqual(eager[r].applied, expected, "request \(r), unlimited demand, round \(round)")
                    if Int.random(in: 0..<4, using: &random) == 0 {
                        lazy[r].request(.max(1))
                        try expectEqual(lazy[r].applied, expected, "request \(r), occasional demand, round \(round)")
                    }
                }
            }
            for recorder in eager + lazy { recorder.cancel() }
        },

        ConformanceCase("live fetch", "the objects publisher sends whole arrays") { context in
            let request = FetchRequest<Item>(sortBy: [.ascending(\.rank)])
            let recorder = LiveRecorder<[Item]>()
            context.store.objectsPublisher(for: request).subscribe(recorder)
            try expectEqual(recorder.values, [[]], "initial array of an empty store")
            try context.store.insertItems(standardItems)
            try context.store.write { tx in try tx.insert(AllTypes.sample(1)) }
            try context.store.write { tx in try tx.delete(Item.self, id: 4) }
            try expectEqual(recorder.values.count, 3, "arrays: initial, insert, delete")
            try expectEqual(recorder.values.last, try context.store.fetch(request), "latest array")
            recorder.cancel()
        },

        ConformanceCase("live fetch", "identity changes apply to the previous list as documented") { context in
            var random = SeededGenerator(seed: 0x5EED_0004)
            let request = FetchRequest<Item>(where: \.rank != nil, sortBy: [.ascending(\.rank), .descending(\.name)])
            let recorder = LiveRecorder<ResultsChange<Item>>()
            context.store.resultsChangesPublisher(for: request).subscribe(recorder)
            var list: [Item] = []
            var seen = 0
            var sawMove = false, sawUpdate = false
            for round in 0..<120 {
                try randomCommit(context.store, using: &random)
                let values = recorder.values
                for (k, change) in values[seen...].enumerated() {
                    try expect(!change.isEmpty || seen + k == 0, "round \(round): an empty change was sent after the first")
                    list = try change.applied(to: list) { $0 }
                    try expectEqual(list, change.results, "applying round \(round)'s change to the previous list")
                    sawMove = sawMove || !change.moved.isEmpty
                    sawUpdate = sawUpdate || !change.updated.isEmpty
                    try expect(Set(change.moved.map(\.new)).isDisjoint(with: change.inserted), "a position is either moved to or inserted at")
                }
                seen = values.count
                try expectEqual(list, try context.store.fetch(request), "round \(round)")
            }
            try expect(sawMove && sawUpdate, "the random commits exercised moves (\(sawMove)) and in-place updates (\(sawUpdate))")
            recorder.cancel()
        },

        ConformanceCase("live fetch", "record and type publishers report each change") { context in
            let record = Item(id: 1, name: "one")
            let recordEvents = LiveRecorder<(Item?, ChangeType)>()
            context.store.publisher(for: record).subscribe(recordEvents)
            let updatesOnly = LiveRecorder<(Item?, ChangeType)>()
            context.store.publisher(for: record, changeTypes: [.updated]).subscribe(updatesOnly)
            let typeEvents = LiveRecorder<[([Item], ChangeType)]>()
            context.store.publisher(for: Item.self).subscribe(typeEvents)
            try context.store.insertItems([record, Item(id: 2, name: "two")])
            try context.store.write { tx in try tx.update(Item(id: 1, name: "uno")) }
            try context.store.write { tx in try tx.insert(AllTypes.sample(1)) }
            try context.store.write { tx in try tx.delete(Item.self, id: 1); try tx.update(Item(id: 2, name: "dos")) }
            try expectEqual(recordEvents.values.map { $0.0?.name ?? "nil" }, ["one", "uno", "nil"], "record values")
            try expectEqual(recordEvents.values.map(\.1), [.inserted, .updated, .deleted], "record change types")
            try expectEqual(updatesOnly.values.map(\.1), [.updated], "filtered to updates")
            let groups = typeEvents.values.map { $0.map { ($0.0.map(\.id), $0.1) } }
            try expectEqual(groups.count, 3, "type events: one per commit touching Item")
            try expectEqual(groups.map { $0.map(\.1) }, [[.inserted], [.updated], [.updated, .deleted]], "type event groups")
            try expectEqual(groups.last?.last?.0, [1], "the deleted record is given")
            for recorder in [recordEvents, updatesOnly] as [LiveRecorder<(Item?, ChangeType)>] { recorder.cancel() }
            typeEvents.cancel()
        },

        ConformanceCase("live fetch", "async sequences deliver and end on cancellation", waiting: { context in
            let request = FetchRequest<Item>(sortBy: [.ascending(\.rank)])
            try context.store.insertItems([Item(id: 1, name: "one", rank: 1)])
            let store = context.store
            let task = Task { () -> [Item] in
                var list: [Item] = []
                var count = 0
                for try await difference in store.differences(for: request) {
                    list = list.applying(difference) ?? []
                    count += 1
                    if count == 1 { try await store.write { tx in try tx.insert(Item(id: 2, name: "two", rank: 2)) } }
                    if count == 2 { break }
                }
                return list
            }
            let list = try await task.value
            try expectEqual(list, try store.fetch(request), "list built by the loop")
            let arrivals = Collected<Int>()
            let endless = Task {
                var received = 0
                for try await _ in store.objects(for: request) {
                    received += 1
                    arrivals.append(received)
                }
                return received
            }
            // The first value comes from a fetch, which a loaded server may take a while to answer.
            _ = await eventually(timeout: .seconds(30)) { !arrivals.values.isEmpty }
            try? await Task.sleep(nanoseconds: 20_000_000)
            endless.cancel()
            let received = try await endless.value
            try expectEqual(received, 1, "values before the task was cancelled")
        }),

        ConformanceCase("live fetch", "concurrent writers and demand keep subscriptions exact", waiting: { context in
            let request = FetchRequest<Item>(where: \.rank >= 0, sortBy: [.descending(\.rank)], limit: 10)
            let eager = LiveRecorder<CollectionDifference<Item>>()
            let slow = LiveRecorder<CollectionDifference<Item>>(initialDemand: .max(1))
            context.store.differencesPublisher(for: request).subscribe(eager)
            context.store.differencesPublisher(for: request).subscribe(slow)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for t in 0..<4 {
                    group.addTask {
                        for i in 0..<30 {
                            try await context.store.write { tx in
                                try tx.upsert(Item(id: (t * 7 + i) % 40, name: "t\(t)", rank: (i * 13 + t) % 50))
                            }
                        }
                    }
                }
                group.addTask {
                    for _ in 0..<40 {
                        slow.request(.max(1))
                        try await Task.sleep(nanoseconds: 1_000_000)
                    }
                }
                try await group.waitForAll()
            }
            slow.request(.unlimited)
            let expected = try context.store.fetch(request)
            try expectEqual(eager.applied, expected, "unlimited demand")
            try expectEqual(slow.applied, expected, "demand from another task")
            eager.cancel()
            slow.cancel()
        }),

        ConformanceCase("live fetch", "another store's commits reach live fetches", requires: .multiProcess, waiting: { context in
            let other = try context.openAnother()
            let request = FetchRequest<Item>(sortBy: [.ascending(\.rank)])
            let recorder = LiveRecorder<CollectionDifference<Item>>()
            other.differencesPublisher(for: request).subscribe(recorder)
            try await context.store.write { tx in
                for item in standardItems { try tx.insert(item) }
            }
            try await context.store.write { tx in try tx.delete(Item.self, id: 2) }
            let expected = try context.store.fetch(request)
            let arrived = await eventually { recorder.applied == expected }
            try expect(arrived, "the other store's live fetch reached \(recorder.applied.map(\.id)), expected \(expected.map(\.id))")
            recorder.cancel()
        }),
    ]

    /// One random commit: inserts, updates (rank, group, score), deletes, no-ops, a
    /// rollback, or a write to another entity.
    static func randomCommit(_ store: Store, using random: inout SeededGenerator) throws {
        let groups: [String?] = ["a", "b", "c", nil]
        let kind = Int.random(in: 0..<10, using: &random)
        var operations: [(Transaction) throws -> Void] = []
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let id = Int.random(in: 0..<30, using: &random)
            let item = Item(id: id, name: "n\(Int.random(in: 0..<5, using: &random))",
                            score: Bool.random(using: &random) ? Double(Int.random(in: -3...3, using: &random)) : nil,
                            rank: Int.random(in: 0..<12, using: &random), group: groups.randomElement(using: &random) ?? nil)
            switch kind {
            case 0, 1: operations.append { tx in _ = try tx.delete(Item.self, id: id) }
            case 2: operations.append { tx in try tx.insert(AllTypes.sample(id)) }
            default: operations.append { tx in try tx.upsert(item) }
            }
        }
        let rollback = kind == 9
        _ = try? store.write { tx in
            for operation in operations { try operation(tx) }
            if rollback { throw ReservoirError(.misuse, "deliberate rollback") }
        }
    }
}

