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
        case .pushed: kind = "pushed"
        case .rejected: kind = "rejected"
        case let .resynced(reason, _, _): kind = "resynced \(reason.rawValue)"
        case .failed: kind = "failed"
        }
        guard kind == expected else {
            throw ConformanceFailure(message: "the sync said \(event), expected \(expected)", file: file, line: line)
        }
    }

    /// `sync.pull()`, or a skip when the local backend keeps no metadata (the optional
    /// ``WriteTransaction/setMetadata(_:to:)``), where a replica keeps its token.
    static func firstPull(_ sync: Sync) throws -> SyncEvent {
        try needingMetadata { try sync.pull() }
    }

    /// `body`, or a skip when the local backend keeps no metadata.
    static func needingMetadata<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as ReservoirError where error.code == .misuse && error.message.contains("keeps no metadata") {
            throw ConformanceSkip(reason: "needs a backend that keeps metadata (WriteTransaction.setMetadata), where a replica keeps its token")
        }
    }

    /// The rejections a round's push reported.
    static func rejections(_ events: [SyncEvent]) -> [String] {
        events.flatMap { event -> [String] in
            guard case let .pushed(_, rejected, _) = event else { return [] }
            return rejected.map { "\($0.id)" }
        }
    }

    static let syncCases: [ConformanceCase] = [
        ConformanceCase("sync", "shapes read whole in pages settle exactly what one read would: local records between the server's stay, records gone or out of the shape go, the token comes last") { context in
            let remote = try Store.open("memory:")
            defer { remote.close() }
            let local = context.store
            // 23 server records, every third outside the shape, so pages of 4 end between them.
            try remote.write { tx in
                for id in 1...23 { try tx.insert(Item(id: id * 2, name: "server \(id * 2)", rank: id % 3 == 0 ? 0 : 5)) }
            }
            let first = try Sync(local: local, remote: remote, shapes: [try SyncShape(FetchRequest<Item>(where: \.rank >= 3))])
            first.resyncPageSize = 4
            let before = try local.read { try $0.lastSequence() }
            try requireEvent(try firstPull(first), "resynced firstSync")
            let inShape = try remote.fetch(FetchRequest<Item>(where: \.rank >= 3)).map { "\($0.id) \($0.name) 5" }
            try expectEqual(inShape.count, 16, "server records in the shape")
            try expectEqual(try itemSummary(local), inShape, "the shape's records after the first pull")
            try expect(try local.read { try $0.lastSequence() } - before >= 4, "16 records in pages of 4 arrive in at least four local commits")

            // Local records made between and after the server's, a server delete, a record
            // leaving the shape; then the shapes change, which reads them whole again.
            try local.write { tx in
                for id in [1, 9, 31, 99] { try tx.insert(Item(id: id, name: "mine \(id)", rank: 1)) }
            }
            try remote.write { tx in
                _ = try tx.delete(Item.self, id: 4)
                try tx.update(Item(id: 8, name: "server 8", rank: 0))
            }
            let second = try Sync(local: local, remote: remote, shapes: [try SyncShape(FetchRequest<Item>(where: \.rank >= 1))])
            second.resyncPageSize = 4
            let pulled = try second.pull()
            try requireEvent(pulled, "resynced shapesChanged")
            guard case let .resynced(_, _, token) = pulled else { return }
            try expectEqual(second.status.token, token, "the replica's token after reading whole")
            let expected = Set(try remote.fetch(FetchRequest<Item>(where: \.rank >= 1)).map(\.id)).union([1, 9, 31, 99])
            try expectEqual(Set(try local.fetch(Item.self).map(\.id)), expected, "after the shapes changed")
            try second.sync()
            try expectEqual(Set(try remote.fetch(FetchRequest<Item>(where: \.rank == 1)).map(\.id)), [1, 9, 31, 99],
                            "the next push uploads the records made locally")
        },
        ConformanceCase("sync", "a local store mirrors a remote store's shapes: first read whole, then change set by change set, resumed from its saved token") { context in
            let remote = try Store.open("memory:?retention=5")
            defer { remote.close() }
            let local = context.store
            try remote.write { tx in
                for id in 1...6 { try tx.insert(Item(id: id, name: "item \(id)", rank: id)) }
            }
            try local.write { tx in try tx.insert(Item(id: 300, name: "local only", rank: 9)) }
            let shape = try SyncShape(FetchRequest<Item>(where: \.rank >= 3))
            let sync = try Sync(local: local, remote: remote, shapes: [shape])
            try requireEvent(try firstPull(sync), "resynced firstSync")
            try expectEqual(try itemSummary(local), ["3 item 3 3", "4 item 4 4", "5 item 5 5", "6 item 6 6", "300 local only 9"],
                            "the shape's records, and the local record not pushed yet, after the first pull")
            try requireEvent(try sync.push(), "pushed")
            try expectEqual(try remote.get(Item.self, id: 300)?.name, "local only", "the first push uploads the local record")
            try requireEvent(try sync.pull(), "pulled")

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
            try expectEqual(try itemSummary(local), ["2 two 8", "3 item 3 3", "4 four 4", "7 seven 7", "300 local only 9"], "after the pull")
            try expectEqual(sync.status.token, token, "status token")

            // Another Sync on the same local store resumes from the saved token.
            try remote.write { tx in try tx.insert(Item(id: 8, name: "eight", rank: 8)) }
            let resumed = try Sync(local: local, remote: remote, shapes: [shape])
            try requireEvent(try resumed.pull(), "pulled")
            try expectEqual(try itemSummary(local), ["2 two 8", "3 item 3 3", "4 four 4", "7 seven 7", "8 eight 8", "300 local only 9"], "after resuming")

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

        ConformanceCase("sync", "local writes reach the remote once each, field by field in the server's order; a delete wins over a concurrent update; a resolver decides, and a change it rejects returns to the server's state") { context in
            let remote = try Store.open("memory:?retention=100")
            defer { remote.close() }
            let local = context.store
            try local.write { tx in
                for id in 1...3 { try tx.insert(Item(id: id, name: "local \(id)", rank: id)) }
            }
            let sync = try Sync(local: local, remote: remote)
            _ = try needingMetadata { try sync.sync() }
            try expectEqual(try itemSummary(remote), try itemSummary(local), "the first sync uploads the records the local store held")
            try expectEqual(try itemSummary(remote), ["1 local 1 1", "2 local 2 2", "3 local 3 3"], "the remote after the first sync")

            // Written locally while the sync does not run (offline): counted, then sent.
            try local.write { tx in
                try tx.update(Item(id: 1, name: "renamed", rank: 1))
                _ = try tx.delete(Item.self, id: 2)
                try tx.insert(Item(id: 4, name: "new", rank: 4))
            }
            try expectEqual(try Sync(local: local, remote: remote).status.pendingChanges, 3, "changes waiting, counted by a new Sync")
            let before = try remote.currentHistoryToken
            let round = try sync.sync()
            try requireEvent(round[0], "pushed")
            try expectEqual(try itemSummary(remote), ["1 renamed 1", "3 local 3 3", "4 new 4"], "the remote after the push")
            try expectEqual(try itemSummary(local), try itemSummary(remote), "both stores after the round")
            try expectEqual(try remote.history(after: before, limit: 10).count, 1, "one remote commit for the pushed batch")
            try expectEqual(sync.status.pendingChanges, 0, "nothing waits after the round")
            let quiet = try remote.currentHistoryToken
            _ = try sync.sync()
            try expectEqual(try remote.currentHistoryToken, quiet, "a round with nothing to send commits nothing on the remote")

            // Field by field: the other client's column stays, the local one is laid over it.
            try remote.write { tx in try tx.update(Item(id: 1, name: "server name", rank: 1)) }
            try local.write { tx in try tx.update(Item(id: 1, name: "renamed", rank: 10)) }
            // The same column on both: the local change reaches the server later, so it wins.
            try remote.write { tx in try tx.update(Item(id: 3, name: "server three", rank: 3)) }
            try local.write { tx in try tx.update(Item(id: 3, name: "local three", rank: 3)) }
            // A delete wins over a concurrent update, whichever side deletes.
            try remote.write { tx in _ = try tx.delete(Item.self, id: 4) }
            try local.write { tx in try tx.update(Item(id: 4, name: "updated", rank: 4)) }
            let conflicts = try sync.sync()
            try expectEqual(try itemSummary(remote), ["1 server name 10", "3 local three 3"], "the remote after the conflicts")
            try expectEqual(try itemSummary(local), try itemSummary(remote), "both stores after the conflicts")
            try expectEqual(rejections(conflicts), ["4"], "the dropped update of a record the server deleted is reported")

            // A resolver decides real conflicts; what it rejects returns to the server's row.
            let strict = try Sync(local: local, remote: remote) { conflict in
                conflict.entity == "conformance_items" && conflict.id == .integer(3) ? .reject("three is the server's") : conflict.fieldwise
            }
            try remote.write { tx in try tx.update(Item(id: 3, name: "server again", rank: 3)) }
            try local.write { tx in
                try tx.update(Item(id: 3, name: "local again", rank: 3))
                try tx.insert(Item(id: 5, name: "five", rank: 5))
            }
            let resolved = try strict.sync()
            try expectEqual(rejections(resolved), ["3"], "the resolver's rejection is reported")
            try expectEqual(try itemSummary(remote), ["1 server name 10", "3 server again 3", "5 five 5"], "the remote after the resolver")
            try expectEqual(try itemSummary(local), try itemSummary(remote), "the rejected record returned to the server's state")
        },

        ConformanceCase("sync", "a record made locally is pushed whole, null columns included, over a record of the same id the server made meanwhile") { context in
            let remote = try Store.open("memory:")
            defer { remote.close() }
            let local = context.store
            func row(_ id: Int64, _ a: Value, _ b: Value, _ c: Value) -> Row {
                Row(columns: ["id", "a", "b", "c"], values: [.integer(id), a, b, c])
            }
            try remote.write { tx in try tx.putRow(row(1, .integer(1), .null, .null), in: rawEntity) }
            try local.write { tx in try tx.putRow(row(2, .null, .null, .text("local")), in: rawEntity) }
            let sync = try Sync(local: local, remote: remote)
            _ = try needingMetadata { try sync.pull() }
            try remote.write { tx in try tx.putRow(row(2, .integer(7), .integer(68), .text("server")), in: rawEntity) }
            try sync.sync()
            let held = try remote.read { try $0.rows(try Query(entity: rawEntity, sort: [SortTerm(column: "id", ascending: true)])) }
            try expectEqual(held.map { "\($0["a"] ?? .null) \($0["b"] ?? .null) \($0["c"] ?? .null)" }, ["1 NULL NULL", "NULL NULL 'local'"],
                            "the server's rows after the push")
            let mirrored = try local.read { try $0.rows(try Query(entity: rawEntity, sort: [SortTerm(column: "id", ascending: true)])) }
            try expectEqual(mirrored.map { "\($0["a"] ?? .null) \($0["b"] ?? .null) \($0["c"] ?? .null)" }, held.map { "\($0["a"] ?? .null) \($0["b"] ?? .null) \($0["c"] ?? .null)" },
                            "the local rows after the round")
        },
    ]
}
