import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// The persisted change log: plain SQL writes by other clients reach subscriptions,
/// own commits are announced once, sequences increase, retention is bounded.
@Suite struct ChangeLogTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let store: Store
        let changes = Collected<ChangeSet>()
        /// When each change set arrived, on the delivering thread.
        let arrivals = Collected<ContinuousClock.Instant>()
        let subscription: AnyCancellable

        init(options: String = "") throws {
            directory = try TemporaryDirectory()
            store = try openStore(directory.databasePath, options: options)
            let changes = self.changes
            let arrivals = self.arrivals
            subscription = store.changeSets.sink {
                arrivals.append(ContinuousClock.now)
                changes.append($0)
            }
        }

        func finish() {
            subscription.cancel()
            store.close()
            directory.cleanUp()
        }

        /// Waits for `count` change sets in all; returns them.
        func wait(for count: Int, timeout: Duration = .seconds(5)) async -> [ChangeSet] {
            _ = await eventually(timeout: timeout) { changes.values.count >= count }
            return changes.values
        }
    }

    @Test func plainSQLWritesReachSubscriptionsNetted() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        try await fixture.store.write { try $0.insert(Todo(id: 1, title: "one", done: false, priority: 1)) }
        let raw = try RawConnection(fixture.directory.databasePath)

        let clock = ContinuousClock()
        let start = clock.now
        try raw.execute("INSERT INTO todos(id, title, done, priority) VALUES(2, 'two', 0, 5)")
        var seen = await fixture.wait(for: 2)
        let latency = fixture.arrivals.values[1] - start
        try #require(seen.count == 2)
        #expect(seen[1].isExternal)
        #expect(seen[1].sequence == 2)
        #expect(seen[1].changes(to: "todos")?.inserted.map(\.row) == [Row([("id", 2), ("title", "two"), ("done", 0), ("priority", 5), ("note", nil)])])
        #expect(latency < .milliseconds(500), "plain SQL insert took \(latency) to arrive")

        // Several statements in one transaction net per record; REPLACE and UPSERT are updates.
        try raw.execute("""
            BEGIN;
            UPDATE todos SET title = 'ONE' WHERE id = 1;
            REPLACE INTO todos(id, title, done, priority) VALUES(2, 'TWO', 1, 5);
            INSERT INTO todos(id, title, done, priority) VALUES(3, 'three', 0, 1)
                ON CONFLICT(id) DO UPDATE SET title = excluded.title;
            INSERT INTO todos(id, title, done, priority) VALUES(3, 'THREE', 0, 1)
                ON CONFLICT(id) DO UPDATE SET title = excluded.title;
            INSERT INTO todos(id, title, done, priority) VALUES(4, 'gone', 0, 1);
            DELETE FROM todos WHERE id = 4;
            COMMIT;
            """)
        seen = await fixture.wait(for: 3)
        try #require(seen.count == 3)
        let netted = try #require(seen[2].changes(to: "todos"))
        #expect(netted.updated.map(\.id) == [1, 2])
        #expect(netted.inserted.map(\.id) == [3])
        #expect(netted.inserted.first?.row.value("title") == "THREE")
        #expect(netted.deleted.isEmpty)

        // Changing a record's id is a delete and an insert.
        try raw.execute("UPDATE todos SET id = 10 WHERE id = 3")
        seen = await fixture.wait(for: 4)
        try #require(seen.count == 4)
        #expect(seen[3].changes(to: "todos")?.deleted == [3])
        #expect(seen[3].changes(to: "todos")?.inserted.map(\.id) == [10])
        #expect(seen.map(\.sequence) == [1, 2, 3, 4])
        #expect(try fixture.store.fetch(Todo.self).map(\.title) == ["ONE", "TWO", "THREE"])
    }

    /// #37 item 3: plain SQL that writes a row back as it was (`set title = title`, or an
    /// update and its reversal in one transaction) is logged as an update, and live fetches
    /// removed and re-inserted the identical record. They now compare the row read back with
    /// the one they hold and send nothing.
    @Test func plainSQLUpdatesThatChangeNothingSendNoDifference() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        try await fixture.store.write { tx in
            for id in 1...3 { try tx.insert(Todo(id: id, title: "todo \(id)", done: false, priority: id)) }
        }
        let differences = Collected<CollectionDifference<Todo>>()
        let subscription = fixture.store.differencesPublisher(for: FetchRequest<Todo>(sortBy: [.ascending(\.priority)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { differences.append($0) })
        defer { subscription.cancel() }
        let raw = try RawConnection(fixture.directory.databasePath)
        try raw.execute("UPDATE todos SET title = title")
        try raw.execute("BEGIN; UPDATE todos SET title = 'changed' WHERE id = 2; UPDATE todos SET title = 'todo 2' WHERE id = 2; COMMIT;")
        // A real change after them, so everything before it has been delivered once it arrives.
        try raw.execute("UPDATE todos SET done = 1 WHERE id = 3")
        let arrived = await eventually { differences.values.count >= 2 }
        #expect(arrived, "the real change arrived: \(differences.values.count) differences")
        let values = differences.values
        #expect(values.count == 2, "the initial value and the real change only, no difference for the no-op updates: \(values)")
        #expect(values.last.map { changedIDs($0.removals) } == [3] && values.last.map { changedIDs($0.insertions) } == [3])
    }

    /// Found by the differential test: plain SQL that inserted a row and deleted it again
    /// took a sequence with no entries, which the store reported as history lost to retention.
    @Test func plainSQLThatChangesNothingTakesNoSequence() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        try await fixture.store.write { try $0.insert(Todo(id: 1, title: "one", done: false, priority: 1)) }
        let raw = try RawConnection(fixture.directory.databasePath)
        try raw.execute("""
            BEGIN;
            INSERT INTO todos(id, title, done, priority) VALUES(2, 'brief', 0, 5);
            DELETE FROM todos WHERE id = 2;
            COMMIT;
            """)
        _ = try fixture.store.backend.commitToken()
        fixture.store.pollExternalChanges()
        #expect(fixture.changes.values.map(\.sequence) == [1])
        #expect(try await fixture.store.read { try $0.lastSequence() } == 1)
        try raw.execute("INSERT INTO todos(id, title, done, priority) VALUES(3, 'kept', 0, 5)")
        try await fixture.store.write { try $0.insert(Todo(id: 4, title: "own", done: false, priority: 1)) }
        let seen = await fixture.wait(for: 3)
        #expect(seen.map(\.sequence) == [1, 2, 3])
        #expect(seen.map(\.isComplete) == [true, true, true])
        #expect(seen[1].changes(to: "todos")?.inserted.map(\.id) == [3])
    }

    @Test func ownCommitsAreAnnouncedOnceAndPlainSQLBeforeThemComesFirst() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        try await fixture.store.write { try $0.insert(Todo(id: 1, title: "one", done: false, priority: 1)) }
        let raw = try RawConnection(fixture.directory.databasePath)
        // A plain SQL write immediately followed by an own write, before any poll.
        try raw.execute("INSERT INTO todos(id, title, done, priority) VALUES(2, 'sql', 0, 1)")
        try await fixture.store.write { try $0.insert(Todo(id: 3, title: "own", done: false, priority: 1)) }
        let seen = await fixture.wait(for: 3)
        try await Task.sleep(for: .milliseconds(300))  // any duplicate would arrive by now
        #expect(fixture.changes.values.count == 3)
        #expect(seen.map(\.sequence) == [1, 2, 3])
        #expect(seen.map(\.isExternal) == [false, true, false])
        #expect(seen[1].changes(to: "todos")?.inserted.map(\.id) == [2])
        #expect(seen[2].changes(to: "todos")?.inserted.map(\.id) == [3])
    }

    /// Creates a store at `path` holding todo 1 (change set 1), then closes it.
    func writeOneTodoAndClose(_ path: String) throws {
        let store = try openStore(path)
        defer { store.close() }
        try store.write { try $0.insert(Todo(id: 1, title: "one", done: false, priority: 1)) }
    }

    @Test func plainSQLWritesBeforeOpeningAreNumberedButNotReplayed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        try writeOneTodoAndClose(directory.databasePath)
        let raw = try RawConnection(directory.databasePath)
        try raw.execute("DELETE FROM todos WHERE id = 1")
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        #expect(try store.read { try $0.lastSequence() } == 2)
        let log = try store.backend.read { try $0.changeLog(after: 0, limit: 10) }
        #expect(log.map(\.withoutCommit) == [
            ChangeLogEntry(sequence: 1, entity: "todos", id: 1, kind: .inserted),
            ChangeLogEntry(sequence: 2, entity: "todos", id: 1, kind: .deleted),
        ])
        // The plain-SQL change set was given an identity of its own when it was numbered.
        #expect(log.count == 2 && log[1].commit != 0 && log[1].commit != log[0].commit)
        #expect(try store.backend.read { try $0.lastCommit() } == CommitPosition(sequence: 2, commit: log[1].commit))
    }

    @Test func retentionKeepsTheNewestChangeSets() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath, options: "?retention=10")
        defer { store.close() }
        for id in 1...200 {
            try store.write { try $0.insert(Todo(id: id, title: "t\(id)", done: false, priority: 1)) }
        }
        let log = try store.backend.read { try $0.changeLog(after: 0, limit: 1000) }
        #expect(try store.read { try $0.lastSequence() } == 200)
        #expect(log.last?.sequence == 200)
        #expect(log.count >= 10 && log.count < 10 + 64, "kept \(log.count) change sets")
        #expect(log.map(\.sequence) == Array(UInt64(201 - log.count)...200))
        let raw = try RawConnection(directory.databasePath)
        #expect(try raw.query("SELECT count(*) FROM _reservoir_changes") == [["\(log.count)"]])
    }

    @Test func twoStoresInOneProcessSeeEachOthersCommits() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let other = try openStore(fixture.directory.databasePath)
        defer { other.close() }
        try await other.write { try $0.insert(Todo(id: 5, title: "from other", done: false, priority: 1)) }
        let seen = await fixture.wait(for: 1)
        try #require(seen.count == 1)
        #expect(seen[0].isExternal)
        #expect(seen[0].changes(to: "todos")?.inserted.map(\.id) == [5])
    }

    @Test func ownWritesLogOneRowPerKindAndOtherStoresReadEveryID() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { tx in
            for id in 1...4 { try tx.insert(Todo(id: id, title: "t\(id)", done: false, priority: 1)) }
        }
        let keys = EntityDescription(name: "keys")
        let textIDs: [Value] = [.text(""), .text("é"), .text("e\u{301}"), .text(String(repeating: "long ", count: 100))]
        let otherIDs: [Value] = [.blob(Data()), .blob(Data([0, 255, 3])), .real(2.5)]
        try store.write { tx in
            try tx.update(Todo(id: 1, title: "changed", done: true, priority: 1))
            try tx.delete(Todo.self, id: 2)
            try tx.delete(Todo.self, id: 3)
            try tx.insert(Todo(id: 9, title: "nine", done: false, priority: 1))
            for id in textIDs + otherIDs { try tx.putRow(Row([("id", id), ("note", .text("x"))]), in: keys) }
        }
        let raw = try RawConnection(directory.databasePath)
        // First change set: one packed row. Second: keys inserted (packed), todos inserted
        // (one id, unpacked), updated (one), deleted (packed, closing). No trigger rows.
        #expect(try raw.query("SELECT entity, kind, id, ids IS NOT NULL, sequence FROM _reservoir_changes ORDER BY change") == [
            ["todos", "inserted", nil, "1", "1"],
            ["keys", "inserted", nil, "1", nil],
            ["todos", "inserted", "9", "0", nil],
            ["todos", "updated", "1", "0", nil],
            ["todos", "deleted", nil, "1", "2"],
        ])
        let other = try openStore(directory.databasePath)
        defer { other.close() }
        let log = try other.backend.read { try $0.changeLog(after: 0, limit: 10) }
        let expected: [ChangeLogEntry] = (1...4).map { ChangeLogEntry(sequence: 1, entity: "todos", id: .integer(Int64($0)), kind: .inserted) }
            + (textIDs + otherIDs).map { ChangeLogEntry(sequence: 2, entity: "keys", id: $0, kind: .inserted) }
            + [ChangeLogEntry(sequence: 2, entity: "todos", id: 9, kind: .inserted),
               ChangeLogEntry(sequence: 2, entity: "todos", id: 1, kind: .updated),
               ChangeLogEntry(sequence: 2, entity: "todos", id: 2, kind: .deleted),
               ChangeLogEntry(sequence: 2, entity: "todos", id: 3, kind: .deleted)]
        #expect(log.count == expected.count)
        for (got, want) in zip(log, expected) {
            #expect(got.sequence == want.sequence && got.entity == want.entity && got.kind == want.kind && got.id.isIdentical(to: want.id), "\(got) != \(want)")
        }
    }

    @Test func aVersionOneFileIsUpgradedAndItsLogStillReads() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        try writeOneTodoAndClose(directory.databasePath)
        // Make it what version 1 wrote: no ids column.
        let raw = try RawConnection(directory.databasePath)
        try raw.execute("""
            ALTER TABLE _reservoir_changes DROP COLUMN ids; ALTER TABLE _reservoir_changes DROP COLUMN commit_id;
            UPDATE _reservoir_meta SET value = 1 WHERE key = 'format_version'
            """)
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        #expect(try raw.query("SELECT value FROM _reservoir_meta WHERE key = 'format_version'") == [["2"]])
        try store.write { tx in
            try tx.insert(Todo(id: 2, title: "two", done: false, priority: 1))
            try tx.insert(Todo(id: 3, title: "three", done: false, priority: 1))
        }
        let log = try store.backend.read { try $0.changeLog(after: 0, limit: 10) }
        #expect(log.map(\.withoutCommit) == [
            ChangeLogEntry(sequence: 1, entity: "todos", id: 1, kind: .inserted),
            ChangeLogEntry(sequence: 2, entity: "todos", id: 2, kind: .inserted),
            ChangeLogEntry(sequence: 2, entity: "todos", id: 3, kind: .inserted),
        ])
        // The change set written before identities has none (0); the new one has one.
        #expect(log.map { $0.commit == 0 } == [true, false, false])
    }
}

/// The ids of the records in a difference's removals or insertions.
private func changedIDs(_ changes: [CollectionDifference<Todo>.Change]) -> [Int] {
    changes.map { change in
        switch change {
        case let .insert(_, element, _), let .remove(_, element, _): element.id
        }
    }
}

extension ChangeLogEntry {
    /// The entry with its commit identity cleared, to compare with expected entries.
    var withoutCommit: ChangeLogEntry {
        ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind)
    }
}
