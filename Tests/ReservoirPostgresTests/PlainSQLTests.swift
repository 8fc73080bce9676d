import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import ReservoirTestRecords
import Testing

/// Writes by other PostgreSQL clients (psql, another service) reach subscriptions through
/// the tables' triggers, the change log and NOTIFY.
@Suite("PostgreSQL: plain SQL clients")
struct PlainSQLTests {
    /// Runs SQL with psql, as a person at a terminal would.
    static func psql(_ sql: String) throws {
        try PSQL.run(sql, on: try TestServer.url())
    }

    static func schema(of configuration: String) -> String {
        String(configuration.split(separator: "schema=").last ?? "public")
    }

    @Test func psqlTransactionsArriveAsOneChangeSetEach() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try await store.write { tx in
            for id in 1...3 { try tx.insert(Message(id: id, author: 1, body: "message \(id)")) }
        }
        let table = "\(Self.schema(of: configuration)).messages"
        let arrivals = Collected<ChangeSet>()
        let changes = store.changeSets.sink { arrivals.append($0) }
        defer { changes.cancel() }
        let lists = Collected<[Message]>()
        let live = store.objectsPublisher(for: FetchRequest<Message>(sortBy: [.ascending(\.id)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { lists.append($0) })
        defer { live.cancel() }

        try Self.psql("BEGIN; INSERT INTO \(table) (id, author, body) VALUES (10, 2, 'from psql'); UPDATE \(table) SET body = 'edited' WHERE id = 1; DELETE FROM \(table) WHERE id = 2; COMMIT;")
        try #require(await eventually { arrivals.values.count == 1 }, "the psql transaction never arrived: \(arrivals.values)")
        let first = arrivals.values[0]
        #expect(first.isExternal && first.sequence == 2)
        let messages = try #require(first.changes(to: "messages"))
        #expect(messages.inserted.map(\.id) == [10])
        #expect(messages.updated.map(\.id) == [1])
        #expect(messages.updated.first?.row.value("body") == .text("edited"))
        #expect(messages.deleted == [2])

        // Inserted and deleted again: no change, so nothing is announced.
        try Self.psql("BEGIN; INSERT INTO \(table) (id, author, body) VALUES (20, 2, 'gone'); DELETE FROM \(table) WHERE id = 20; COMMIT;")
        // A changed id is the old record deleted and a new one inserted.
        try Self.psql("UPDATE \(table) SET id = 30 WHERE id = 3")
        try #require(await eventually { arrivals.values.count == 2 }, "the id change never arrived: \(arrivals.values)")
        let renamed = try #require(arrivals.values[1].changes(to: "messages"))
        #expect(arrivals.values[1].sequence == 4)
        #expect(renamed.deleted == [3] && renamed.inserted.map(\.id) == [30])

        // This library's next commit follows them.
        try await store.write { try $0.insert(Message(id: 5, author: 1, body: "after")) }
        #expect(arrivals.values.map(\.sequence) == [2, 4, 5])
        let fetched = try store.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))
        #expect(fetched.map(\.id) == [1, 5, 10, 30])
        #expect(await eventually { lists.values.last == fetched }, "the live fetch never matched: \(lists.values.last ?? [])")
    }

    /// #37 item 3: psql writing rows back as they were sends live fetches no difference.
    @Test func psqlUpdatesThatChangeNothingSendNoDifference() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try await store.write { tx in
            for id in 1...3 { try tx.insert(Message(id: id, author: 1, body: "message \(id)")) }
        }
        let table = "\(Self.schema(of: configuration)).messages"
        let arrivals = Collected<ChangeSet>()
        let changes = store.changeSets.sink { arrivals.append($0) }
        defer { changes.cancel() }
        let differences = Collected<CollectionDifference<Message>>()
        let live = store.differencesPublisher(for: FetchRequest<Message>(sortBy: [.ascending(\.id)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { differences.append($0) })
        defer { live.cancel() }
        try Self.psql("UPDATE \(table) SET body = body")
        try Self.psql("BEGIN; UPDATE \(table) SET body = 'changed' WHERE id = 2; UPDATE \(table) SET body = 'message 2' WHERE id = 2; COMMIT;")
        try Self.psql("UPDATE \(table) SET author = 2 WHERE id = 3")
        try #require(await eventually { arrivals.values.count == 3 }, "the three psql transactions arrived: \(arrivals.values.map(\.sequence))")
        #expect(await eventually { differences.values.count >= 2 })
        let values = differences.values
        #expect(values.count == 2, "the initial value and the real change only: \(values)")
        #expect(values.last.map { changedIDs($0.removals) } == [3] && values.last.map { changedIDs($0.insertions) } == [3])
    }

    @Test func aStoreSeesAnotherStoresCommitsThroughNotify() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let writer = try Store.open(configuration, registry: TestServer.registry)
        defer { writer.close() }
        try await writer.write { try $0.insert(Message(id: 1, author: 1, body: "first")) }
        let reader = try Store.open(configuration, registry: TestServer.registry)
        defer { reader.close() }
        let arrivals = Collected<ChangeSet>()
        let changes = reader.changeSets.sink { arrivals.append($0) }
        defer { changes.cancel() }
        let own = Collected<ChangeSet>()
        let ownChanges = writer.changeSets.sink { own.append($0) }
        defer { ownChanges.cancel() }
        for id in 2...21 {
            try await writer.write { try $0.insert(Message(id: id, author: 1, body: "message \(id)")) }
        }
        #expect(await eventually { arrivals.values.count == 20 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(arrivals.values.map(\.sequence) == Array(2...21))
        #expect(arrivals.values.allSatisfy { $0.isExternal })
        // The writer's own commits are announced once, by the write itself.
        #expect(own.values.map(\.sequence) == Array(2...21))
        #expect(own.values.allSatisfy { !$0.isExternal })
    }

    /// Commit in one store → change set in another (a separate connection set, as another
    /// machine would have), printed as median and p99: a figure, not an assertion.
    @Test func crossClientLatencyIsReported() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let writer = try Store.open(configuration, registry: TestServer.registry)
        defer { writer.close() }
        try await writer.write { try $0.insert(Message(id: 0, author: 1, body: "first")) }
        let reader = try Store.open(configuration, registry: TestServer.registry)
        defer { reader.close() }
        let arrivals = Collected<(UInt64, ContinuousClock.Instant)>()
        let changes = reader.changeSets.sink { arrivals.append(($0.sequence, ContinuousClock.now)) }
        defer { changes.cancel() }
        var latencies: [Duration] = []
        for id in 1...60 {
            let committed = ContinuousClock.now
            try await writer.write { try $0.insert(Message(id: id, author: 1, body: "m\(id)")) }
            let target = UInt64(id + 1)
            try #require(await eventually { arrivals.values.contains { $0.0 == target } })
            if let arrival = arrivals.values.first(where: { $0.0 == target }) { latencies.append(arrival.1 - committed) }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...20)))
        }
        let sorted = latencies.sorted()
        let median = sorted[sorted.count / 2]
        let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
        print("postgres cross-client latency over \(sorted.count) commits: median \(median), p99 \(p99)")
        #expect(sorted.count == 60)
    }

    @Test func aTableOfAnotherApplicationIsAClearError() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try Self.psql("CREATE SCHEMA IF NOT EXISTS \(Self.schema(of: configuration)); CREATE TABLE \(Self.schema(of: configuration)).messages (id integer PRIMARY KEY, note text)")
        let error = try #require(throws: ReservoirError.self) {
            try store.write { try $0.insert(Message(id: 1, author: 1, body: "x")) }
        }
        #expect(error.code == .invalidSchema)
        #expect(error.message.contains("messages") && error.message.contains("not made by Reservoir"), "\(error.message)")
        // Reading the type is refused alike, rather than answered with none.
        let read = try #require(throws: ReservoirError.self) { _ = try store.fetch(Message.self) }
        #expect(read.code == .invalidSchema, "\(read)")
    }
}


/// A lost connection (a server restart, a network cut) is replaced; nothing is lost or
/// announced twice. Simulated per store with `pg_terminate_backend`, so the other tests
/// sharing the server are not disturbed.
@Suite("PostgreSQL: lost connections")
struct LostConnectionTests {
    @Test func storesReconnectAndSubscriptionsCatchUp() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let tag = UUID().uuidString.lowercased().prefix(8)
        let writer = try Store.open(configuration + "&application_name=writer-\(tag)", registry: TestServer.registry)
        defer { writer.close() }
        try await writer.write { try $0.insert(Message(id: 1, author: 1, body: "before")) }
        let reader = try Store.open(configuration + "&application_name=reader-\(tag)", registry: TestServer.registry)
        defer { reader.close() }
        let arrivals = Collected<ChangeSet>()
        let changes = reader.changeSets.sink { arrivals.append($0) }
        defer { changes.cancel() }
        let lists = Collected<[Int]>()
        let live = reader.objectsPublisher(for: FetchRequest<Message>(sortBy: [.ascending(\.id)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { lists.append($0.map(\.id)) })
        defer { live.cancel() }
        try await writer.write { try $0.insert(Message(id: 2, author: 1, body: "first")) }
        try #require(await eventually { arrivals.values.count == 1 })

        // Cut every connection of both stores, as a server restart would.
        try PlainSQLTests.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name IN ('writer-\(tag)', 'reader-\(tag)')")
        try await Task.sleep(for: .milliseconds(100))
        // Writes after the cut succeed on a fresh connection; the reader catches up.
        for id in 3...5 {
            try await writer.write { try $0.insert(Message(id: id, author: 1, body: "after")) }
        }
        #expect(await eventually { arrivals.values.count == 4 }, "arrived: \(arrivals.values)")
        try await Task.sleep(for: .milliseconds(200))
        #expect(arrivals.values.map(\.sequence) == [2, 3, 4, 5], "each commit once, in order")
        #expect(await eventually { lists.values.last == [1, 2, 3, 4, 5] }, "live: \(lists.values.last ?? [])")
        #expect(try reader.fetch(Message.self).map(\.id) == [1, 2, 3, 4, 5])
    }

    /// A pooled reader connection cut since its last use is replaced by every kind of read,
    /// including one whose statement that connection has never prepared (preparing it is the
    /// first thing to meet the cut). Found by the lost-tail test, whose server crash left its
    /// store's pooled readers dead. The backend alone reads, without a `Store`: a store's
    /// listener, cut too, would reconnect and catch up, its reads taking the dead connections
    /// from the pool before this test's.
    @Test func everyKindOfReadReplacesACutPooledConnection() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try await store.write { try $0.insert(Message(id: 1, author: 1, body: "one")) }
        try await store.write { try $0.insert(Message(id: 2, author: 2, body: "two")) }
        let tag = UUID().uuidString.lowercased().prefix(8)
        let backend = try PostgresBackend(StoreConfiguration(configuration + "&application_name=cut-\(tag)"))
        defer { backend.close() }
        let entity = Message.schema.entity.name
        let ids = { (rows: [Row]) in rows.map { $0.value("id") } }
        let reads: [(String, () throws -> String)] = [
            ("row", { "\(try backend.row(entity, id: .integer(2))?.value("body") ?? .null)" }),
            ("fetch", {
                var found: [Value] = []
                try backend.fetch(FetchRequest<Message>(where: \.author >= 2).query(), expecting: { _ in }, each: { found.append($0.value("id")) })
                return "\(found)"
            }),
            ("count", { "\(try backend.count(FetchRequest<Message>(where: \.author <= 1).query()))" }),
            ("read", { "\(ids(try backend.read { try $0.fetch(FetchRequest<Message>(where: \.body == "one").query()) }))" }),
        ]
        let expected = ["\(Value.text("two"))", "\([Value.integer(2)])", "1", "\([Value.integer(1)])"]
        for (index, (name, read)) in reads.enumerated() {
            // Four connections in the pool (nested reads each take one), each having read
            // another shape (so each has the catalog's statements, but not the next read's).
            #expect(try Self.nestedReads(backend, 4) { try $0.fetch(Query(entity: Message.schema.entity)).count } == 2)
            try PlainSQLTests.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cut-\(tag)'")
            try await Task.sleep(for: .milliseconds(100))
            do {
                #expect(try read() == expected[index], "\(name) after the cut")
            } catch {
                Issue.record("\(name) after the cut threw: \(error)")
            }
        }
    }
}

extension LostConnectionTests {
    /// The same for a store no write has created yet, whose reads first ask whether its tables
    /// exist. The backend alone, without a `Store`: a store's listener, cut too, would reconnect
    /// and catch up, its reads taking the dead connections from the pool before this test's.
    @Test func aReadOfAStoreNotYetCreatedReplacesACutPooledConnection() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let tag = UUID().uuidString.lowercased().prefix(8)
        let backend = try PostgresBackend(StoreConfiguration(configuration + "&application_name=uncreated-\(tag)"))
        defer { backend.close() }
        #expect(try Self.nestedReads(backend, 4) { try $0.lastSequence() } == 0)
        try PlainSQLTests.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'uncreated-\(tag)'")
        try await Task.sleep(for: .milliseconds(100))
        for attempt in 1...4 {
            do {
                #expect(try backend.read { try $0.lastSequence() } == 0)
            } catch {
                Issue.record("read \(attempt) after the cut threw: \(error)")
            }
        }
    }

    /// `depth` reads of `backend`, each inside the last (each on a reader connection of its
    /// own, pooled when it ends), each running `body`; returns what the outermost `body` did.
    static func nestedReads<R>(_ backend: PostgresBackend, _ depth: Int, _ body: (any ReadTransaction) throws -> R) throws -> R {
        try backend.read { transaction in
            let result = try body(transaction)
            if depth > 1 { _ = try nestedReads(backend, depth - 1, body) }
            return result
        }
    }
}

/// The ids of the records in a difference's removals or insertions.
private func changedIDs(_ changes: [CollectionDifference<Message>.Change]) -> [Int] {
    changes.map { change in
        switch change {
        case let .insert(_, element, _), let .remove(_, element, _): element.id
        }
    }
}
