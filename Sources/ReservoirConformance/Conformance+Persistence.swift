import Foundation
import Reservoir

extension ConformanceSuite {
    static let persistenceCases: [ConformanceCase] = [
        ConformanceCase("persistence", "data survives closing and reopening", requires: .persistent) { context in
            try context.store.insertItems(standardItems)
            try context.store.write { tx in try tx.insert(AllTypes.sample(3)) }
            let sequence = try context.store.read { try $0.lastSequence() }
            context.store.close()
            let reopened = try context.openAnother()
            try expectEqual(try reopened.fetch(Item.self), standardItems.sorted { $0.id < $1.id }, "items after reopening")
            try expectEqual(try reopened.fetch(AllTypes.self).count, 1, "all-types records after reopening")
            try expectEqual(try reopened.read { try $0.lastSequence() }, sequence, "last sequence after reopening")
            let recorder = ChangeRecorder(reopened)
            try reopened.write { tx in try tx.insert(Item(id: 100, name: "after")) }
            try expect((recorder.changeSets.first?.sequence ?? 0) > sequence, "a new commit's sequence \(recorder.changeSets.map(\.sequence)) follows \(sequence)")
            try expectEqual(try reopened.fetch(FetchRequest<Item>(where: \.score == 2.5)).map(\.id), [1, 3], "indexed query after reopening")
        },

        ConformanceCase("persistence", "a field added later reads as nil", requires: .persistent) { context in
            try context.store.write { tx in
                try tx.insert(EvolvingV1(id: "a", title: "first"))
                try tx.insert(EvolvingV1(id: "b", title: "second"))
            }
            context.store.close()
            let reopened = try context.openAnother()
            try expectEqual(try reopened.fetch(EvolvingV2.self), [EvolvingV2(id: "a", title: "first"), EvolvingV2(id: "b", title: "second")], "old rows as V2")
            try reopened.write { tx in try tx.insert(EvolvingV2(id: "c", title: "third", rating: 5, tags: ["x"])) }
            try expectEqual(try reopened.fetch(FetchRequest<EvolvingV2>(where: \.rating == nil)).map(\.id), ["a", "b"], "rating == nil")
            try expectEqual(try reopened.fetch(FetchRequest<EvolvingV2>(where: \.rating >= 1)).map(\.id), ["c"], "rating >= 1")
            try expectEqual(try reopened.fetch(EvolvingV1.self).map(\.title), ["first", "second", "third"], "V1 still reads every row")
        },

        ConformanceCase("multi-store", "a commit in one store reaches another's changes", requires: .multiProcess, waiting: { context in
            let other = try context.openAnother()
            let recorder = ChangeRecorder(other)
            try await context.store.write { tx in try tx.insert(Item(id: 1, name: "from the first store", rank: 7)) }
            let arrived = await eventually { recorder.changeSets.count >= 1 }
            try expect(arrived, "the other store saw no change set within 5 s")
            guard let changeSet = recorder.changeSets.first else { return }
            try expect(changeSet.isExternal, "a commit by another store is external")
            let rows = changeSet.changes(to: "conformance_items")?.inserted ?? []
            try expectEqual(try rows.map { try RowDecoder().decode(Item.self, from: $0.row) }, [Item(id: 1, name: "from the first store", rank: 7)], "rows carried")
            try expectEqual(try other.get(Item.self, id: 1)?.rank, 7, "the other store reads the record")
        }),

        ConformanceCase("multi-store", "every commit is announced once, in order, in both stores", requires: .multiProcess, waiting: { context in
            let other = try context.openAnother()
            let mine = ChangeRecorder(context.store)
            let theirs = ChangeRecorder(other)
            for i in 0..<6 {
                let writer = i % 2 == 0 ? context.store : other
                try await writer.write { tx in try tx.insert(Item(id: i, name: "n\(i)")) }
            }
            let settled = await eventually { mine.changeSets.count >= 6 && theirs.changeSets.count >= 6 }
            try expect(settled, "change sets seen: \(mine.changeSets.count) and \(theirs.changeSets.count), expected 6 each")
            try? await Task.sleep(nanoseconds: 200_000_000)  // a late duplicate would arrive within a few polls
            try expectEqual(mine.changeSets.map(\.sequence), theirs.changeSets.map(\.sequence), "sequences seen by both stores")
            let sequences = mine.changeSets.map(\.sequence)
            try expectEqual(sequences.count, 6, "change sets per store")
            try expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "sequences increase: \(sequences)")
        }),
    ]

    /// A store that falls behind the change log's retention re-reads instead of missing commits.
    static let fallingBehindCase = ConformanceCase(
        "multi-store", "a store that falls behind the change log re-reads instead of missing commits",
        requires: .multiProcess, needsShortChangeLog: true, waiting: { context in
            guard let option = context.harness.shortChangeLog else { return }
            // The case's own store would share the location without the option: close it first.
            context.store.close()
            let configuration = try StoreConfiguration(context.configuration + (context.configuration.contains("?") ? "&" : "?") + option)
            let writer = try Store(backend: context.harness.registry.makeBackend(configuration), configuration: configuration)
            defer { writer.close() }
            try writer.write { tx in try tx.insert(Item(id: 0, name: "first", rank: 0)) }
            // Probes only when told to (no timer, no commit signal), so it is sure to fall behind.
            let laggard = try Store(backend: context.harness.registry.makeBackend(configuration), configuration: configuration,
                                    pollInterval: .seconds(3600), usesCommitSignal: false)
            defer { laggard.close() }
            let request = FetchRequest<Item>(sortBy: [.descending(\.rank)], limit: 10)
            let live = LiveRecorder<CollectionDifference<Item>>()
            laggard.differencesPublisher(for: request).subscribe(live)
            let announced = ChangeRecorder(laggard)
            // Well past the retention, even for a backend that trims only now and then.
            for i in 1...150 {
                try writer.write { tx in try tx.insert(Item(id: i, name: "n\(i)", rank: i)) }
            }
            laggard.pollExternalChanges()
            try expectEqual(live.applied.map(\.id), try laggard.fetch(request).map(\.id), "the lagging store's live fetch")
            try expect(announced.changeSets.contains { !$0.isComplete }, "an incomplete change set announced the lost stretch: \(announced.changeSets)")
            let sequences = announced.changeSets.map(\.sequence)
            try expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "sequences increase: \(sequences)")
            try expectEqual(sequences.last, try writer.read { try $0.lastSequence() }, "the last announced sequence")
            live.cancel()
            announced.cancel()
        })

    /// With the timer out of the way (an hour apart), only the backend's commit signal can
    /// bring another store's commits: every one must arrive, the last one included (a signal
    /// that fires before the commit is visible, and is then forgotten, loses it).
    static let commitSignalCase = ConformanceCase(
        "multi-store", "another store's commits arrive through the commit signal alone",
        requires: [.multiProcess, .commitSignal], waiting: { context in
            let configuration = try StoreConfiguration(context.configuration)
            let observer = try Store(backend: context.harness.registry.makeBackend(configuration), configuration: configuration, pollInterval: .seconds(3600))
            defer { observer.close() }
            let request = FetchRequest<Item>(where: \.rank >= 0, sortBy: [.descending(\.rank)])
            let live = LiveRecorder<CollectionDifference<Item>>()
            observer.differencesPublisher(for: request).subscribe(live)
            let announced = ChangeRecorder(observer)
            for i in 1...30 {
                try await context.store.write { tx in try tx.insert(Item(id: i, name: "n\(i)", rank: i % 7)) }
                let sequence = try await context.store.read { try $0.lastSequence() }
                let arrived = await eventually(timeout: .seconds(10)) { announced.changeSets.last?.sequence == sequence }
                try expect(arrived, "commit \(i) (sequence \(sequence)) never reached the other store; it announced \(announced.changeSets.map(\.sequence))")
            }
            try expectEqual(live.applied.map(\.id), try await context.store.read { try $0.fetch(request) }.map(\.id), "the other store's live fetch")
            live.cancel()
            announced.cancel()
        })

    static let configurationCases: [ConformanceCase] = [
        ConformanceCase("configuration", "an unknown option is rejected by name") { context in
            let bad = context.configuration + (context.configuration.contains("?") ? "&" : "?") + "bogus=1"
            let error = try expectError(.invalidConfiguration, "opening \(bad)") { try Store.open(bad, registry: context.harness.registry) }
            try expect(error.message.contains("bogus"), "message names the option: \(error.message)")
        },

        ConformanceCase("configuration", "an unknown scheme names the accepted ones") { context in
            let error = try expectError(.invalidConfiguration, "opening nosuch:x") { try Store.open("nosuch:x", registry: context.harness.registry) }
            let scheme = context.configuration.prefix { $0 != ":" }
            try expect(error.message.contains("nosuch") && error.message.contains("\(scheme):"), "message names the scheme given and \(scheme): among the accepted: \(error.message)")
        },
    ]
}
