import Foundation
import Reservoir
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
}
