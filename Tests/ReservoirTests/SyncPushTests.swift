import Foundation
import Reservoir
import ReservoirConformance
import Testing

private struct Note: Storable {
    var id: Int
    var text: String
    var stars: Int
    static let schema = Schema<Note>("notes", fields: [.field(\.text), .field(\.stars)])
}

/// A push's exactly-once promise under faults the conformance suite cannot make: a server write
/// lost before or after its commit, and a replica made again (a restarted app) in between.
@Suite("Sync: each local change applied on the server once")
struct SyncPushTests {
    private struct Setup {
        let server = MemoryBackend()
        let flaky: SharedServer
        let remote: Store
        let other: Store
        let local: Store

        init() throws {
            flaky = SharedServer(server)
            remote = try Store(backend: flaky, pollInterval: .seconds(3600), usesCommitSignal: false)
            other = try Store(backend: SharedServer(server), pollInterval: .seconds(3600), usesCommitSignal: false)
            local = try Store.open("memory:")
        }

        func close() {
            local.close()
            other.close()
            remote.close()
            server.close()
        }

        func serverNote(_ id: Int) throws -> Note? { try other.get(Note.self, id: id) }
    }

    @Test("a batch whose commit answer was lost is not applied again over a later write by another client")
    func lostCommitAnswer() throws {
        let setup = try Setup()
        defer { setup.close() }
        try setup.local.write { tx in try tx.insert(Note(id: 1, text: "draft", stars: 0)) }
        try Sync(local: setup.local, remote: setup.remote).sync()
        #expect(try setup.serverNote(1)?.text == "draft")

        try setup.local.write { tx in try tx.update(Note(id: 1, text: "mine", stars: 0)) }
        setup.flaky.faults.withLock { $0 = [.afterCommit] }
        let first = try Sync(local: setup.local, remote: setup.remote)
        #expect(throws: ReservoirError.self) { try first.push() }
        #expect(try setup.serverNote(1)?.text == "mine", "the batch was committed on the server")
        #expect(first.status.pendingChanges == 1, "the batch waits in the outbox: \(first.status)")

        // Another client writes the same column after it; then the app restarts and pushes.
        try setup.other.write { tx in try tx.update(Note(id: 1, text: "theirs", stars: 0)) }
        let serverBefore = try setup.other.currentHistoryToken
        let restarted = try Sync(local: setup.local, remote: setup.remote)
        let events = try restarted.sync()
        #expect(try setup.serverNote(1)?.text == "theirs", "the batch was not applied a second time: \(events)")
        #expect(try setup.other.history(after: serverBefore, limit: 10).isEmpty, "the resent batch committed nothing on the server")
        #expect(try setup.local.get(Note.self, id: 1)?.text == "theirs", "the local record follows the server")
        #expect(restarted.status.pendingChanges == 0)
    }

    @Test("a batch lost before its commit is sent again, after a restart, and applied once")
    func lostBeforeCommit() throws {
        let setup = try Setup()
        defer { setup.close() }
        try setup.local.write { tx in try tx.insert(Note(id: 1, text: "one", stars: 1)) }
        try Sync(local: setup.local, remote: setup.remote).sync()

        try setup.local.write { tx in
            try tx.update(Note(id: 1, text: "one", stars: 5))
            try tx.insert(Note(id: 2, text: "two", stars: 2))
        }
        setup.flaky.faults.withLock { $0 = [.beforeCommit] }
        #expect(throws: ReservoirError.self) { try Sync(local: setup.local, remote: setup.remote).push() }
        #expect(try setup.serverNote(2) == nil, "nothing reached the server")
        // Written while the batch waits: the next batch carries it.
        try setup.local.write { tx in try tx.update(Note(id: 2, text: "two, edited", stars: 2)) }
        let before = try setup.other.currentHistoryToken
        let restarted = try Sync(local: setup.local, remote: setup.remote)
        #expect(restarted.status.pendingChanges == 3, "two in the outbox, one written after it: \(restarted.status)")
        try restarted.sync()
        #expect(try setup.serverNote(1)?.stars == 5 && setup.serverNote(2)?.text == "two, edited")
        #expect(try setup.other.history(after: before, limit: 10).count == 2, "the waiting batch, then the next")
        #expect(restarted.status.pendingChanges == 0)
    }

    @Test("a replica whose history hold expired compares every record with its base, local deletes included")
    func pushWithoutHistory() throws {
        let setup = try Setup()
        defer { setup.close() }
        let local = try Store.open("memory:?retention=2&holdage=1s")
        defer { local.close() }
        try local.write { tx in for id in 1...3 { try tx.insert(Note(id: id, text: "n\(id)", stars: id)) } }
        let sync = try Sync(local: local, remote: setup.remote)
        try sync.sync()
        Thread.sleep(forTimeInterval: 1.2)
        try local.write { tx in _ = try tx.delete(Note.self, id: 2) }
        try local.write { tx in try tx.update(Note(id: 3, text: "n3", stars: 30)) }
        for id in 10...(10 + 2 * 64) { try local.write { tx in try tx.upsert(Note(id: 4, text: "churn \(id)", stars: 0)) } }
        #expect(throws: ReservoirError.self) { try local.history(after: try HistoryToken(parsing: "rsv1..0.0"), limit: 1) }
        try sync.sync()
        #expect(try setup.other.fetch(Note.self).map { "\($0.id) \($0.text) \($0.stars)" } == ["1 n1 1", "3 n3 30", "4 churn 138 0"])
        #expect(try local.fetch(Note.self).map(\.id) == [1, 3, 4])
    }
}
