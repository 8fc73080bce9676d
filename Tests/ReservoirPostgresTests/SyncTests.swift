import Foundation
@testable import Reservoir
import ReservoirConformance
import ReservoirPostgres
import ReservoirTestRecords
import Testing

/// A local replica of a PostgreSQL store (Backends.md, "Sync"): the remote's commits, this
/// library's and psql's, arrive in the local store live, and a replica resumes after a restart.
@Suite("PostgreSQL: a local replica")
struct SyncTests {
    @Test func psqlAndLibraryCommitsReachAFollowingReplica() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let remote = try Store.open(configuration, registry: TestServer.registry)
        defer { remote.close() }
        try await remote.write { tx in
            for id in 1...3 { try tx.insert(Message(id: id, author: id, body: "message \(id)")) }
        }
        let local = try Store.open("memory:")
        defer { local.close() }
        let sync = try Sync(local: local, remote: remote, shapes: [try SyncShape(FetchRequest<Message>(where: \.author >= 2))])
        sync.start()
        defer { sync.stop() }
        #expect(await eventually { (try? local.fetch(Message.self).map(\.id)) == [2, 3] }, "the first pull")

        let table = "\(PlainSQLTests.schema(of: configuration)).messages"
        try PlainSQLTests.psql("BEGIN; INSERT INTO \(table) (id, author, body) VALUES (10, 5, 'from psql'); UPDATE \(table) SET author = 0 WHERE id = 2; COMMIT;")
        try await remote.write { tx in try tx.update(Message(id: 1, author: 9, body: "now in the shape")) }
        let expected = try remote.fetch(FetchRequest<Message>(where: \.author >= 2, sortBy: [.ascending(\.id)]))
        #expect(expected.map(\.id) == [1, 3, 10])
        let arrived = await eventually { (try? local.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))) == expected }
        let held = try local.fetch(Message.self).map(\.id)
        #expect(arrived, "the replica holds the shape: \(held)")
        #expect(sync.status.token == (try remote.currentHistoryToken), "the replica's token is the remote's newest")

        // A replica made again on the same local store resumes from its saved token.
        sync.stop()
        try PlainSQLTests.psql("DELETE FROM \(table) WHERE id = 3")
        let again = try Sync(local: local, remote: remote, shapes: sync.shapes)
        let event = try again.pull()
        guard case let .pulled(changeSets, _, _) = event else {
            Issue.record("expected a pull from the saved token, got \(event)")
            return
        }
        #expect(changeSets == 1, "only the change set after the saved token: \(event)")
        #expect(try local.fetch(Message.self).map(\.id).sorted() == [1, 10])
    }

    /// A following replica's round for a remote commit runs on the remote store's listener
    /// thread, which delivered the commit (``CommitWatch/wakesOnItsOwnThread``): no hop to the
    /// replica's queue. An events subscriber there may stop the replica: it stops without
    /// waiting for the round it is in, and the remote's later commits are not pulled.
    @Test func aRemoteCommitsRoundRunsOnTheListenerThreadAndMayStopThere() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let remote = try Store.open(configuration, registry: TestServer.registry)
        let writer = try Store.open(configuration, registry: TestServer.registry)
        defer {
            remote.close()
            writer.close()
        }
        try await writer.write { tx in try tx.insert(Message(id: 1, author: 1, body: "before")) }
        let local = try Store.open("memory:")
        defer { local.close() }
        let sync = try Sync(local: local, remote: remote)
        // The thread each remote change set was delivered on, by record id.
        let deliveredOn = Locked<[Int: UInt]>([:])
        let heard = remote.changeSets.sink { changeSet in
            for entity in changeSet.entities {
                for change in entity.inserted { if case let .integer(id) = change.id { deliveredOn.withLock { $0[Int(id)] = currentThreadID() } } }
            }
        }
        defer { heard.cancel() }
        let pulledOn = Locked<[(records: Int, thread: UInt)]>([])
        let stopped = Locked(false)
        let events = sync.events.sink { event in
            guard case let .pulled(changeSets, records, _) = event, changeSets > 0 else { return }
            pulledOn.withLock { $0.append((records, currentThreadID())) }
            if (try? local.get(Message.self, id: 2)) != nil {
                sync.stop()
                stopped.withLock { $0 = true }
            }
        }
        defer { events.cancel() }
        sync.start()
        #expect(await eventually { (try? local.get(Message.self, id: 1)) != nil }, "the first pull")
        try await writer.write { tx in try tx.insert(Message(id: 2, author: 2, body: "heard live")) }
        #expect(await eventually { stopped.withLock { $0 } }, "stopped from the events subscriber")
        #expect(!sync.status.isFollowing)
        let thread = deliveredOn.withLock { $0[2] }
        #expect(thread != nil && pulledOn.withLock { $0.last?.thread } == thread,
                "the round that pulled record 2 ran where the remote delivered it: \(pulledOn.withLock { $0.map(\.thread) }) against \(String(describing: thread))")
        // Stopped: a later remote commit is not pulled.
        try await writer.write { tx in try tx.insert(Message(id: 3, author: 3, body: "after the stop")) }
        #expect(await eventually { (try? remote.get(Message.self, id: 3)) != nil })
        try await Task.sleep(for: .milliseconds(300))
        #expect(try local.get(Message.self, id: 3) == nil)
    }

    /// Two devices on one PostgreSQL store: one writes while its network is gone, then syncs;
    /// the other, following live, sees it; a change the server refuses (a trigger's RAISE) is
    /// reported and undone locally; a batch whose COMMIT answer is cut is not applied twice.
    @Test func offlineWritesConvergeOnceAndRefusalsAreUndone() async throws {
        let (throughCutter, cutter, direct) = try TCPCutter.inFrontOfFreshStore("timeout=5")
        defer { TestServer.drop(direct) }
        defer { cutter.stop() }
        let seed = try Store.open(direct, registry: TestServer.registry)
        defer { seed.close() }
        try await seed.write { tx in for id in 1...2 { try tx.insert(Message(id: id, author: 1, body: "server \(id)")) } }

        let phone = try Store.open("memory:")
        defer { phone.close() }
        try await phone.write { tx in try tx.insert(Message(id: 10, author: 2, body: "written before the first sync")) }
        let phoneSync = try Sync(local: phone, remote: throughCutter, registry: TestServer.registry)
        defer { phoneSync.stop() }
        let laptop = try Store.open("memory:")
        defer { laptop.close() }
        let laptopSync = try Sync(local: laptop, remote: direct, registry: TestServer.registry)
        laptopSync.start()
        defer { laptopSync.stop() }
        try phoneSync.sync()
        #expect(await eventually { (try? laptop.fetch(Message.self).map(\.id)) == [1, 2, 10] }, "the laptop sees the phone's first upload live")

        // Offline: the connection is cut at the next COMMIT, and no new one gets through.
        cutter.arm(.beforeCommitSent)
        cutter.refuseNewConnections(true)
        try await phone.write { tx in
            try tx.update(Message(id: 1, author: 1, body: "edited offline"))
            _ = try tx.delete(Message.self, id: 2)
            try tx.insert(Message(id: 11, author: 2, body: "new offline"))
        }
        #expect(throws: ReservoirError.self) { try phoneSync.sync() }
        #expect(!phoneSync.status.isConnected && phoneSync.status.pendingChanges == 3, "\(phoneSync.status)")
        try await laptop.write { tx in try tx.update(Message(id: 1, author: 7, body: "server 1")) }   // another column, meanwhile
        // Meanwhile means on the server before the phone is back (the laptop pushes on its own).
        #expect(await eventually { (try? seed.fetch(FetchRequest<Message>(where: \.id == 1)).first?.author) == 7 }, "the laptop pushes its edit")

        cutter.refuseNewConnections(false)
        cutter.disarm()
        var round: [SyncEvent] = []
        #expect(await eventually { (try? phoneSync.sync()).map { round = $0 } != nil }, "the phone syncs once the network is back: \(phoneSync.status)")
        let server = try seed.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)])).map { "\($0.id) \($0.author) \($0.body)" }
        #expect(server == ["1 7 edited offline", "10 2 written before the first sync", "11 2 new offline"], "field by field: \(server) \(round)")
        #expect(try phone.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)])).map { "\($0.id) \($0.author) \($0.body)" } == server)
        #expect(await eventually { (try? laptop.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)])).map { "\($0.id) \($0.author) \($0.body)" }) == server },
                "the laptop follows")
        #expect(phoneSync.status.pendingChanges == 0 && phoneSync.status.isConnected)

        // A change the server refuses: reported, undone locally; the rest of the batch goes in.
        let schema = PlainSQLTests.schema(of: direct).split(separator: "&").first.map(String.init) ?? ""
        let table = "\(schema).messages"
        try PlainSQLTests.psql("""
            CREATE FUNCTION \(schema).no_shouting() RETURNS trigger AS $$
            BEGIN IF NEW.body = upper(NEW.body) THEN RAISE EXCEPTION 'no shouting: %', NEW.body; END IF; RETURN NEW; END $$ LANGUAGE plpgsql;
            CREATE TRIGGER no_shouting BEFORE INSERT OR UPDATE ON \(table) FOR EACH ROW EXECUTE FUNCTION \(schema).no_shouting();
            """)
        try await phone.write { tx in
            try tx.update(Message(id: 10, author: 2, body: "HELLO"))
            try tx.insert(Message(id: 12, author: 2, body: "quiet"))
        }
        let refused = try phoneSync.sync()
        guard case let .pushed(changes, rejected, _) = refused.first else {
            Issue.record("expected a push first: \(refused)")
            return
        }
        #expect(changes == 1 && rejected.map(\.id) == [.integer(10)] && rejected.first?.reason.contains("no shouting") == true, "\(refused)")
        #expect(try phone.get(Message.self, id: 10)?.body == "written before the first sync", "the refused change is undone locally")
        #expect(try seed.get(Message.self, id: 12)?.body == "quiet")

        // The answer to COMMIT cut: whatever the client learns, the batch is applied once.
        cutter.arm(.afterCommitSent)
        try await phone.write { tx in try tx.update(Message(id: 12, author: 2, body: "from the phone")) }
        _ = try? phoneSync.push()
        try await laptop.write { tx in try tx.update(Message(id: 12, author: 2, body: "from the laptop, later")) }
        #expect(await eventually { (try? seed.get(Message.self, id: 12)?.body) == "from the laptop, later" })
        let before = try seed.currentHistoryToken
        try phoneSync.sync()
        #expect(try seed.get(Message.self, id: 12)?.body == "from the laptop, later", "the phone's batch was not applied again")
        #expect(try seed.history(after: before, limit: 10).isEmpty, "nothing more committed on the server")
        #expect(try phone.get(Message.self, id: 12)?.body == "from the laptop, later")
    }
}
