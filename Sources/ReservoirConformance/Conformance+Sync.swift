import Foundation
import Reservoir

/// A replica on this backend (Backends.md, "Sync"): the backend under test is the local store,
/// mirroring a `memory:` remote that keeps a short history.
extension ConformanceSuite {
    /// `(id, name)` of every item in `store`, in id order.
    static func itemSummary(_ store: Store) throws -> [String] {
        try store.fetch(Item.self).map { "\($0.id) \($0.name) \($0.rank.map(String.init) ?? "-")" }
    }

    static func requireEvent(_ event: SyncEvent, _ expected: String, file: String = #fileID, line: Int = #line) throws {
        let kind: String
        switch event {
        case .pulled: kind = "pulled"
        case let .resynced(reason, _, _): kind = "resynced \(reason.rawValue)"
        case .failed: kind = "failed"
        }
        guard kind == expected else {
            throw ConformanceFailure(message: "the pull said \(event), expected \(expected)", file: file, line: line)
        }
    }

    /// `sync.pull()`, or a skip when the local backend keeps no metadata (the optional
    /// ``WriteTransaction/setMetadata(_:to:)``), where a replica keeps its token.
    static func firstPull(_ sync: Sync) throws -> SyncEvent {
        do {
            return try sync.pull()
        } catch let error as ReservoirError where error.code == .misuse && error.message.contains("keeps no metadata") {
            throw ConformanceSkip(reason: "needs a backend that keeps metadata (WriteTransaction.setMetadata), where a replica keeps its token")
        }
    }

    static let syncCases: [ConformanceCase] = [
        ConformanceCase("sync", "a local store mirrors a remote store's shapes: first read whole, then change set by change set, resumed from its saved token") { context in
            let remote = try Store.open("memory:?retention=5")
            defer { remote.close() }
            let local = context.store
            try remote.write { tx in
                for id in 1...6 { try tx.insert(Item(id: id, name: "item \(id)", rank: id)) }
            }
            try local.write { tx in try tx.insert(Item(id: 99, name: "local only", rank: 9)) }
            let shape = try SyncShape(FetchRequest<Item>(where: \.rank >= 3))
            let sync = try Sync(local: local, remote: remote, shapes: [shape])
            try requireEvent(try firstPull(sync), "resynced firstSync")
            try expectEqual(try itemSummary(local), ["3 item 3 3", "4 item 4 4", "5 item 5 5", "6 item 6 6"],
                            "the shape's records, and nothing else of the entity, after the first pull")

            try remote.write { tx in
                try tx.update(Item(id: 4, name: "four", rank: 4))
                _ = try tx.delete(Item.self, id: 5)
                try tx.update(Item(id: 2, name: "two", rank: 8))       // joins the shape
                try tx.update(Item(id: 6, name: "six", rank: 1))       // leaves it
            }
            try remote.write { tx in try tx.insert(Item(id: 7, name: "seven", rank: 7)) }
            let pulled = try sync.pull()
            try requireEvent(pulled, "pulled")
            guard case let .pulled(changeSets, _, token) = pulled else { return }
            try expectEqual(changeSets, 2, "change sets pulled")
            try expectEqual(token, try remote.currentHistoryToken, "the replica's token is the remote's newest")
            try expectEqual(try itemSummary(local), ["2 two 8", "3 item 3 3", "4 four 4", "7 seven 7"], "after the pull")
            try expectEqual(sync.status.token, token, "status token")

            // Another Sync on the same local store resumes from the saved token.
            try remote.write { tx in try tx.insert(Item(id: 8, name: "eight", rank: 8)) }
            let resumed = try Sync(local: local, remote: remote, shapes: [shape])
            try requireEvent(try resumed.pull(), "pulled")
            try expectEqual(try itemSummary(local), ["2 two 8", "3 item 3 3", "4 four 4", "7 seven 7", "8 eight 8"], "after resuming")

            // Past the remote's retention: read whole, and said so.
            for id in 10...160 { try remote.write { tx in try tx.insert(Item(id: id, name: "n\(id)", rank: id % 2 == 0 ? 5 : 0)) } }
            try remote.write { tx in _ = try tx.delete(Item.self, id: 3) }
            try requireEvent(try resumed.pull(), "resynced historyExpired")
            let expected = try remote.fetch(FetchRequest<Item>(where: \.rank >= 3)).map { "\($0.id) \($0.name) \($0.rank.map(String.init) ?? "-")" }
            try expectEqual(try itemSummary(local), expected, "after re-reading past the remote's retention")

            // Other shapes: read whole again.
            let everything = try Sync(local: local, remote: remote, shapes: [SyncShape(Item.self)])
            try requireEvent(try everything.pull(), "resynced shapesChanged")
            try expectEqual(try local.count(FetchRequest<Item>()), try remote.count(FetchRequest<Item>()), "every remote item after the shapes changed")
        },

        ConformanceCase("sync", "a following replica applies remote commits as ordinary local commits a live fetch sees", waiting: { context in
            let remote = try Store.open("memory:")
            defer { remote.close() }
            let local = context.store
            let sync = try Sync(local: local, remote: remote)
            let live = LiveRecorder<CollectionDifference<Item>>()
            local.differencesPublisher(for: FetchRequest<Item>(sortBy: [.ascending(\.id)])).subscribe(live)
            defer { live.cancel() }
            _ = try firstPull(sync)
            sync.start()
            defer { sync.stop() }
            for id in 1...5 { try await remote.write { tx in try tx.insert(Item(id: id, name: "item \(id)")) } }
            try await remote.write { tx in _ = try tx.delete(Item.self, id: 2) }
            let arrived = await eventually { (try? local.fetch(Item.self).map(\.id)) == [1, 3, 4, 5] }
            let ids = try local.fetch(Item.self).map(\.id)
            try expect(arrived, "the replica follows the remote: \(ids)")
            try expect(await eventually { live.applied.map(\.id) == [1, 3, 4, 5] }, "the live fetch folds to the replica: \(live.applied.map(\.id))")
            try expect(sync.status.isFollowing && sync.status.isConnected && sync.status.lastError == nil, "status: \(sync.status)")
        }),
    ]
}
