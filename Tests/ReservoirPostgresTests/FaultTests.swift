import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
@testable import ReservoirPostgres
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server misbehaving as real ones do (issue #30, items 3, 5 and 6): a frozen server
/// process, a connection cut during `COMMIT`, a refused first write, client-side mistakes.
@Suite("PostgreSQL: faults")
struct PostgresFaultTests {
    /// Rows `sql` returns, one a line, through psql (`-At`), on the test server or `url`.
    static func query(_ sql: String, on url: String? = nil) throws -> [String] {
        try PSQL.rows(sql, on: url ?? TestServer.url())
    }

    static func tables(in schema: String) throws -> [String] {
        try query("SELECT tablename FROM pg_tables WHERE schemaname = '\(schema)' ORDER BY 1")
    }

    /// Runs `body` on a thread of its own; returns its outcome, or nil when it has not
    /// returned after `seconds` (then `unblock` runs, and the outcome is still waited for, so
    /// nothing is left running).
    static func bounded<T: Sendable>(seconds: Double, unblock: () -> Void, _ body: @escaping @Sendable () throws -> T) -> (result: Result<T, any Error>, returnedInTime: Bool) {
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            outcome.withLock { $0 = Result { try body() } }
            done.signal()
        }.start()
        let inTime = done.wait(timeout: .now() + seconds) == .success
        if !inTime {
            unblock()
            done.wait()
        }
        return (outcome.withLock { $0 } ?? .failure(ReservoirError(.backend, "no outcome")), inTime)
    }

    // MARK: - Item 3: bounded calls

    @Test("a server process frozen mid-transaction makes the write fail with .timeout, not hang")
    func frozenServerProcess() throws {
        let configuration = try TestServer.freshStore("timeout=2")
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "before")) }
        let backend = try #require(store.backend as? PostgresBackend)
        let pid = backend.writerPID.withLock { $0 }
        try #require(pid > 0)
        let stopped = Locked(false)
        func resume() { if stopped.withLock({ $0 }) { kill(pid, SIGCONT); stopped.withLock { $0 = false } } }
        defer { resume() }
        let started = ContinuousClock.now
        // Generous: the bound is 2 s; 30 s proves only that the call does not hang.
        let (result, inTime) = Self.bounded(seconds: 30, unblock: resume) {
            try store.write { tx in
                try tx.insert(Message(id: 2, author: 1, body: "during"))  // begins the transaction
                #expect(kill(pid, SIGSTOP) == 0, "cannot stop server process \(pid): errno \(errno) (the SIGSTOP tests need the test server on this machine, signalable by this user, as scripts/with-postgres makes it)")
                stopped.withLock { $0 = true }
                _ = try tx.fetch(Message.self)  // waits for the frozen process
            }
        }
        let elapsed = ContinuousClock.now - started
        resume()
        #expect(inTime, "the write did not return within 30 s of freezing its server process")
        switch result {
        case .success:
            Issue.record("the write succeeded against a frozen server process")
        case .failure(let error):
            let error = try #require(error as? ReservoirError, "\(error)")
            #expect(error.code == .timeout, "\(error)")
            #expect(error.message.contains("did not answer within 2 s") && error.message.contains("timeout=2"), "\(error.message)")
        }
        #expect(elapsed < .seconds(30), "took \(elapsed)")
        // The store goes on, on a new connection; nothing of the failed write is there.
        try store.write { try $0.insert(Message(id: 3, author: 1, body: "after")) }
        #expect(try store.fetch(Message.self).map(\.id) == [1, 3])
    }

    @Test("a write whose COMMIT reaches a frozen server process ends with .commitOutcomeUnknown, resolved once it runs again")
    func frozenDuringCommit() throws {
        let configuration = try TestServer.freshStore("timeout=2")
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "before")) }
        let backend = try #require(store.backend as? PostgresBackend)
        let pid = backend.writerPID.withLock { $0 }
        try #require(pid > 0)
        let stopped = Locked(false)
        func resume() { if stopped.withLock({ $0 }) { kill(pid, SIGCONT); stopped.withLock { $0 = false } } }
        defer { resume() }
        let (result, inTime) = Self.bounded(seconds: 30, unblock: resume) {
            try store.write { tx in
                try tx.insert(Message(id: 2, author: 1, body: "maybe"))
                #expect(kill(pid, SIGSTOP) == 0, "cannot stop server process \(pid): errno \(errno) (the SIGSTOP tests need the test server on this machine, signalable by this user, as scripts/with-postgres makes it)")
                stopped.withLock { $0 = true }
                // Returning sends the insert and COMMIT to the frozen process.
            }
        }
        #expect(inTime, "the write did not return within 30 s of freezing its server process")
        guard case .failure(let failure) = result, let error = failure as? ReservoirError else {
            Issue.record("expected .commitOutcomeUnknown, got \(result)")
            return
        }
        #expect(error.code == .commitOutcomeUnknown, "\(error)")
        let transaction = try #require(backend.unresolvedCommit, "the backend names the transaction")
        #expect(error.message.contains("\(transaction)"), "\(error.message)")
        // The COMMIT was sent: once the process runs again it commits, and the server says so.
        resume()
        #expect(eventuallyBlocking { (try? backend.commitOutcome(ofTransaction: transaction)) == true })
        #expect(try store.fetch(Message.self).map(\.id) == [1, 2])
    }

    @Test("a lost COMMIT is believed committed only when the change log holds its change set: after a crash its transaction id may be another's")
    func reusedTransactionIDIsNotBelieved() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "committed")) }
        let backend = try #require(store.backend as? PostgresBackend)
        let transaction = backend.writerTransaction
        let sequence = try store.backend.read { try $0.lastSequence() }
        let schema = PlainSQLTests.schema(of: configuration)
        let logged = try Self.query("SELECT DISTINCT commit_id FROM \(schema)._reservoir_changes WHERE sequence = \(sequence)")
        let commit = UInt64(bitPattern: try #require(logged.first.flatMap { Int64($0) }))
        try #require(logged.count == 1 && commit != 0)
        // The transaction that committed that change set: committed.
        #expect(try backend.outcome(PendingCommit(transaction: transaction, sequence: sequence, commit: commit)) == true)
        // The same id, committed, but another change set under the sequence the lost write took
        // (a crash lost it, and another transaction took the id and the sequence): not committed.
        #expect(try backend.outcome(PendingCommit(transaction: transaction, sequence: sequence, commit: commit &+ 1)) == false)
        // A sequence nobody committed: not committed.
        #expect(try backend.outcome(PendingCommit(transaction: transaction, sequence: sequence + 1, commit: commit)) == false)
        // An id the server never handed out (lost with its WAL): not committed.
        #expect(try backend.outcome(PendingCommit(transaction: transaction + 1_000_000, sequence: sequence + 1, commit: commit)) == false)
    }

    /// The store through a proxy that cuts the writer's connection at its `COMMIT`.
    private func throughCutter(_ options: String = "") throws -> (configuration: String, cutter: TCPCutter, drop: String) {
        let proxied = try TCPCutter.inFrontOfFreshStore(options)
        return (proxied.configuration, proxied.cutter, proxied.direct)
    }

    @Test("a connection cut after COMMIT reached the server: the write succeeds, resolved from the server's commit log")
    func cutAfterCommitSent() throws {
        let (configuration, cutter, direct) = try throughCutter("timeout=5")
        defer { cutter.stop(); TestServer.drop(direct) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "before")) }
        cutter.arm(.afterCommitSent)
        try store.write { try $0.insert(Message(id: 2, author: 1, body: "cut")) }
        #expect(cutter.cutCount == 1, "the proxy cut the connection at COMMIT")
        #expect(try store.fetch(Message.self).map(\.id) == [1, 2])
        try store.write { try $0.insert(Message(id: 3, author: 1, body: "after")) }
        #expect(try store.fetch(Message.self).map(\.id) == [1, 2, 3])
    }

    @Test("a connection cut before COMMIT reached the server: a plain failure saying nothing was committed")
    func cutBeforeCommitSent() throws {
        let (configuration, cutter, direct) = try throughCutter("timeout=5")
        defer { cutter.stop(); TestServer.drop(direct) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "before")) }
        cutter.arm(.beforeCommitSent)
        let error = try #require(throws: ReservoirError.self) {
            try store.write { try $0.insert(Message(id: 2, author: 1, body: "cut")) }
        }
        #expect(cutter.cutCount == 1)
        #expect(error.code == .backend, "\(error)")
        #expect(error.message.contains("rolled the transaction back") && error.message.contains("nothing of it is committed"), "\(error.message)")
        #expect(try store.fetch(Message.self).map(\.id) == [1])
    }

    @Test("a connection cut during COMMIT with the server unreachable: .commitOutcomeUnknown, and the outcome asked later")
    func cutWithServerUnreachable() throws {
        let (configuration, cutter, direct) = try throughCutter("timeout=2&connect_timeout=2")
        defer { cutter.stop(); TestServer.drop(direct) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "before")) }
        let backend = try #require(store.backend as? PostgresBackend)
        cutter.arm(.afterCommitSent)
        cutter.refuseNewConnections(true)
        let started = ContinuousClock.now
        let error = try #require(throws: ReservoirError.self) {
            try store.write { try $0.insert(Message(id: 2, author: 1, body: "cut")) }
        }
        #expect(ContinuousClock.now - started < .seconds(30), "bounded by timeout (2 s) for the answer and 2 s to resolve")
        #expect(error.code == .commitOutcomeUnknown, "\(error)")
        #expect(error.message.contains("may have"), "\(error.message)")
        let transaction = try #require(backend.unresolvedCommit)
        cutter.refuseNewConnections(false)
        #expect(eventuallyBlocking { (try? backend.commitOutcome(ofTransaction: transaction)) == true })
        #expect(try store.fetch(Message.self).map(\.id) == [1, 2])
    }

    // MARK: - Item 5: a refused first write leaves nothing

    @Test("a write refused for another application's table leaves the schema as it was, every time")
    func refusedFirstWriteLeavesNothing() throws {
        let configuration = try TestServer.freshStore()
        let schema = PlainSQLTests.schema(of: configuration)
        defer { TestServer.drop(configuration) }
        try PlainSQLTests.psql("CREATE SCHEMA \(schema); CREATE TABLE \(schema).messages (id integer PRIMARY KEY, note text); INSERT INTO \(schema).messages VALUES (7, 'theirs')")
        let before = try Self.tables(in: schema)
        #expect(before == ["messages"])
        for attempt in 1...2 {
            let store = try Store.open(configuration, registry: TestServer.registry)
            let error = try #require(throws: ReservoirError.self) {
                try store.write { try $0.insert(Message(id: 1, author: 1, body: "x")) }
            }
            // Reading the type is refused alike, not answered "none" (theirs has a row).
            let read = try #require(throws: ReservoirError.self) { _ = try store.fetch(Message.self) }
            #expect(read.code == .invalidSchema && read.message.contains("not made by Reservoir"), "attempt \(attempt): \(read)")
            store.close()
            #expect(error.code == .invalidSchema, "attempt \(attempt): \(error)")
            #expect(error.message.contains("not made by Reservoir"), "attempt \(attempt): \(error.message)")
            #expect(try Self.tables(in: schema) == before, "attempt \(attempt) left the schema changed")
        }
        #expect(try Self.query("SELECT note FROM \(schema).messages") == ["theirs"])
    }

    // MARK: - Item 6: smaller

    @Test("options libpq refuses before contacting a server are .invalidConfiguration, not a server's refusal", arguments: [
        ("sslmode=bogus", "sslmode"),
        ("port=99999", "port"),
    ])
    func clientSideErrors(_ option: String, _ named: String) throws {
        let configuration = try TestServer.url() + "?" + option
        let error = try #require(throws: ReservoirError.self) { _ = try Store.open(configuration, registry: TestServer.registry) }
        #expect(error.code == .invalidConfiguration, "\(error)")
        #expect(!error.message.contains("refused the connection"), "\(error.message)")
        #expect(error.message.contains("libpq rejects") && error.message.contains(named), "\(error.message)")
    }

    // PUBLIC has no CREATE on a database by default: the role has only its schema.
    @Test("a role owning its schema, without CREATE on the database, makes and uses a store there")
    func roleOwningItsSchema() throws {
        let role = "owner_" + UUID().uuidString.lowercased().prefix(8)
        let schema = "s_\(role)"
        try PlainSQLTests.psql("CREATE ROLE \(role) LOGIN; CREATE SCHEMA \(schema) AUTHORIZATION \(role)")
        defer { try? PlainSQLTests.psql("DROP SCHEMA IF EXISTS \(schema) CASCADE; DROP ROLE \(role)") }
        let configuration = try PostgresBadInputTests.server(user: role) + "?schema=\(schema)"
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "mine")) }
        #expect(try store.fetch(Message.self).map(\.id) == [1])
    }
}
