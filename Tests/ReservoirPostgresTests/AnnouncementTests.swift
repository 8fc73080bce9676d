import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import ReservoirTestRecords
import Testing

/// This library's commits send their change sets on the store's announcement channel; a
/// listening backend hands them to its store, and says when something else was heard.
@Suite("PostgreSQL: commits announced with their change sets")
struct AnnouncementTests {
    /// Probes `backend` until its token moves from `token` (a NOTIFY arrived), up to a minute.
    private func waitForToken(_ backend: PostgresBackend, from token: UInt64) async throws -> UInt64 {
        var latest = token
        let moved = await eventually { (try? backend.commitToken()).map { latest = $0; return $0 != token } ?? false }
        try #require(moved, "no notification arrived")
        return latest
    }

    @Test("another store's commit arrives as its change set, rows included; plain SQL and a change set too large for NOTIFY are heard as incomplete")
    func listenerHearsAnnouncements() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try await store.write { try $0.insert(Message(id: 1, author: 1, body: "first")) }

        let listening = try PostgresBackend(StoreConfiguration(configuration))
        defer { listening.close() }
        // A read brings the store's identity, which names the channel; the probe then listens.
        let before = try listening.read { try $0.lastCommit() }
        var token = try listening.commitToken()
        _ = listening.takeHeardCommits()

        try await store.write { tx in
            _ = try tx.upsert(Message(id: 1, author: 1, body: "edited"))
            try tx.insert(Message(id: 2, author: 2, body: "second"))
        }
        token = try await waitForToken(listening, from: token)
        let heard = listening.takeHeardCommits()
        #expect(heard.isComplete)
        let announcement = try #require(heard.announcements.first)
        #expect(heard.announcements.count == 1)
        #expect(announcement.previous.isSameCommit(as: before))
        let after = try listening.read { try $0.lastCommit() }
        #expect(announcement.changeSet.position == after)
        let messages = try #require(announcement.changeSet.changes(to: "messages"))
        #expect(messages.updated.map(\.id) == [.integer(1)])
        #expect(messages.updated.first?.row.value("body") == .text("edited"))
        #expect(messages.inserted.map(\.id) == [.integer(2)])
        // Exactly the rows a read of the log would have loaded.
        let stored = try listening.read { try $0.row("messages", id: .integer(2)) }
        #expect(messages.inserted.first?.row == stored)

        // Plain SQL sends only the plain signal: heard, but not announced.
        let table = "\(PlainSQLTests.schema(of: configuration)).messages"
        try PlainSQLTests.psql("INSERT INTO \(table) (id, author, body) VALUES (3, 3, 'from psql')")
        token = try await waitForToken(listening, from: token)
        let plain = listening.takeHeardCommits()
        #expect(!plain.isComplete)
        #expect(plain.announcements.isEmpty)

        // Too large for a NOTIFY payload: the plain signal alone.
        try await store.write { tx in
            for id in 100..<400 { try tx.insert(Message(id: id, author: 4, body: String(repeating: "long ", count: 20))) }
        }
        token = try await waitForToken(listening, from: token)
        let large = listening.takeHeardCommits()
        #expect(!large.isComplete)
        #expect(large.announcements.isEmpty)

        // Nothing more heard: complete and empty.
        let quiet = listening.takeHeardCommits()
        #expect(quiet.isComplete && quiet.announcements.isEmpty)
    }

    @Test("a following store publishes announced commits: its subscription folds to the fetch across announced, plain SQL and large commits")
    func followingStoreStaysExact() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let writer = try Store.open(configuration, registry: TestServer.registry)
        defer { writer.close() }
        try await writer.write { try $0.insert(Message(id: 1, author: 1, body: "first")) }
        let follower = try Store.open(configuration, registry: TestServer.registry)
        defer { follower.close() }
        let lists = Collected<[Message]>()
        let live = follower.objectsPublisher(for: FetchRequest<Message>(sortBy: [.ascending(\.id)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { lists.append($0) })
        defer { live.cancel() }
        let table = "\(PlainSQLTests.schema(of: configuration)).messages"
        for round in 0..<20 {
            switch round % 4 {
            case 0: try await writer.write { _ = try $0.upsert(Message(id: round, author: round, body: "round \(round)")) }
            case 1: try await writer.write { tx in _ = try tx.delete(Message.self, id: round - 1) }
            case 2: try PlainSQLTests.psql("INSERT INTO \(table) (id, author, body) VALUES (\(1000 + round), 0, 'psql')")
            default: try await writer.write { tx in
                for id in 2000 + round * 100..<2000 + round * 100 + 150 { _ = try tx.upsert(Message(id: id, author: round, body: String(repeating: "x", count: 60))) }
            }
            }
        }
        let expected = try writer.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))
        #expect(await eventually { lists.values.last == expected }, "the follower's live list never matched the server's \(expected.count) records")
        #expect(try follower.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)])) == expected)
    }
}

/// An indexed field's index serves the contract's sort order both ways.
@Suite("PostgreSQL: indexes in the contract's order")
struct IndexOrderTests {
    @Test("a sort on an indexed field, ascending (nulls first) or descending (nulls last), with a limit, is read from the index without a sort")
    func indexServesBothDirections() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try await store.write { tx in
            for id in 1...50 { try tx.insert(Message(id: id, author: id % 7, body: "m\(id)")) }
        }
        let table = "\(PlainSQLTests.schema(of: configuration)).messages"
        // PGCompiler's spelling of each direction; with sequential scans and sorts priced out,
        // a plan with a Sort node means no index could give the order.
        for order in ["\"author\" ASC NULLS FIRST", "\"author\" DESC NULLS LAST"] {
            let plan = try PSQL.rows("SET enable_seqscan = off; SET enable_sort = off; EXPLAIN SELECT * FROM \(table) ORDER BY \(order) LIMIT 5",
                                     on: try TestServer.url())
            #expect(!plan.contains { $0.contains("Sort") } && plan.contains { $0.contains("Index") }, "ORDER BY \(order): \(plan)")
        }
    }
}
