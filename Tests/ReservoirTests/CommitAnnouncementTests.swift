import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import Testing

private struct Tally: Storable {
    var id: Int
    var value: Int
    static let schema = Schema<Tally>("tallies", fields: [.field(\.value)])
}

/// One memory backend seen by two stores (as two processes see one server), which hears what
/// the test announces and counts the reads made through it.
private final class AnnouncingMemory: StorageBackend {
    let inner: MemoryBackend
    let reads = Locked(0)
    /// `reads` when `commitToken()` was first called: only the store's poller calls it, first in
    /// the probe it makes as it starts, which then reads the log once.
    let readsAtFirstToken = Locked<Int?>(nil)
    let pending = Locked(HeardCommits(announcements: [], isComplete: false))

    init(_ inner: MemoryBackend) { self.inner = inner }

    var capabilities: BackendCapabilities { [.multiProcess] }
    var location: String { "memory" }

    func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R {
        reads.withLock { $0 += 1 }
        return try inner.read(body)
    }

    func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R { try inner.write(body) }
    func commitToken() throws -> UInt64 {
        let count = reads.withLock { $0 }
        readsAtFirstToken.withLock { if $0 == nil { $0 = count } }
        return try inner.commitToken()
    }
    func close() {}

    func takeHeardCommits() -> HeardCommits {
        pending.withLock { heard in
            defer { heard = HeardCommits(announcements: [], isComplete: true) }
            return heard
        }
    }
}

@Suite("Commit announcements: change sets that travel with the commit signal")
struct CommitAnnouncementTests {
    private static func changeSet(sequence: UInt64, commit: UInt64) -> ChangeSet {
        let row = Row(columns: ["a", "b", "c", "d", "e"], values: [.integer(-7), .real(-0.0), .text("né\u{0}x"), .blob(Data([0, 255, 1])), .null])
        return ChangeSet(sequence: sequence, entities: [
            EntityChanges(entity: "alpha", inserted: [RowChange(id: .integer(1), row: row)], updated: [RowChange(id: .text("k"), row: Row(columns: ["a"], values: [.real(.infinity)]))],
                          deleted: [.integer(3), .blob(Data([9]))], deletedRows: [RowChange(id: .integer(3), row: row)]),
            EntityChanges(entity: "β", deleted: [.text("gone")]),
        ], isExternal: false, commit: commit)
    }

    @Test("an announcement reads back exactly: values of every kind, rows, deletions, both positions; deleted rows are not carried")
    func roundTrip() throws {
        let original = Self.changeSet(sequence: 42, commit: 0xDEAD_BEEF_0102_0304)
        let announcement = try #require(CommitAnnouncement(previous: CommitPosition(sequence: 41, commit: 0xFFFF_FFFF_FFFF_FFFF), changeSet: original))
        let text = try #require(announcement.encoded(limit: 8000))
        let decoded = try CommitAnnouncement(decoding: text, from: "the test")
        #expect(decoded == announcement)
        #expect(decoded.previous == CommitPosition(sequence: 41, commit: 0xFFFF_FFFF_FFFF_FFFF))
        #expect(decoded.changeSet.position == original.position)
        #expect(decoded.changeSet.isExternal)
        #expect(decoded.changeSet.entities.map(\.entity) == ["alpha", "β"])
        #expect(decoded.changeSet.entities[0].inserted == original.entities[0].inserted)
        #expect(decoded.changeSet.entities[0].updated == original.entities[0].updated)
        #expect(decoded.changeSet.entities[0].deleted.count == 2)
        #expect(decoded.changeSet.entities[0].deletedRows.isEmpty)
        // Exact: an integer stays an integer and -0.0 keeps its sign.
        let row = decoded.changeSet.entities[0].inserted[0].row
        guard case .integer(-7)? = row["a"], case let .real(zero)? = row["b"] else {
            Issue.record("values changed kind: \(row)")
            return
        }
        #expect(zero.sign == .minus)
    }

    @Test("an announcement longer than the limit is not made; a migration's, an incomplete or a rewound change set is never announced")
    func limitsAndKinds() throws {
        let many = (0..<200).map { RowChange(id: .integer(Int64($0)), row: Row(columns: ["text"], values: [.text(String(repeating: "x", count: 40))])) }
        let large = try #require(CommitAnnouncement(previous: CommitPosition(sequence: 1, commit: 1),
                                                    changeSet: ChangeSet(sequence: 2, entities: [EntityChanges(entity: "big", inserted: many)], commit: 2)))
        #expect(large.encoded(limit: 7999) == nil)
        let encoded = try #require(large.encoded(limit: 100_000))
        #expect(encoded.utf8.count > 7999)
        #expect(CommitAnnouncement(previous: CommitPosition(sequence: 1, commit: 1), changeSet: ChangeSet(sequence: 2, entities: [], isComplete: false, commit: 2)) == nil)
        #expect(CommitAnnouncement(previous: CommitPosition(sequence: 1, commit: 1), changeSet: ChangeSet(sequence: 2, entities: [], commit: 2, isRewound: true)) == nil)
        #expect(CommitAnnouncement(previous: CommitPosition(sequence: 1, commit: 1), changeSet: ChangeSet(sequence: 2, entities: [], commit: 2, isSchemaChange: true)) == nil)
        // The record of a schema version marks a migration's change set, as a read of the log takes it.
        #expect(CommitAnnouncement(previous: CommitPosition(sequence: 1, commit: 1), changeSet: ChangeSet(
            sequence: 2, entities: [EntityChanges(entity: "reservoir_schema_versions", inserted: [RowChange(id: .integer(1), row: Row())])], commit: 2)) == nil)
    }

    @Test("damaged announcement text is refused as corrupt, naming where it came from")
    func damagedText() throws {
        let announcement = try #require(CommitAnnouncement(previous: CommitPosition(sequence: 1, commit: 5), changeSet: Self.changeSet(sequence: 2, commit: 6)))
        let text = try #require(announcement.encoded(limit: 8000))
        var bytes = try #require(Data(base64Encoded: text))
        for damaged in ["", "not base64!", Data([2] + bytes.dropFirst()).base64EncodedString(), bytes.dropLast(3).base64EncodedString(), (bytes + [0]).base64EncodedString()] {
            #expect {
                _ = try CommitAnnouncement(decoding: damaged, from: "the listener of schema s")
            } throws: { error in
                let error = error as? ReservoirError
                return error?.code == .corrupt && error?.message.contains("the listener of schema s") == true
            }
        }
        // A count that claims more entries than there are bytes ends without reading past them.
        bytes[33] = 0x7F
        #expect(throws: ReservoirError.self) { _ = try CommitAnnouncement(decoding: bytes.base64EncodedString(), from: "x") }
    }

    /// Two stores on one memory backend: `elsewhere` commits; `store` hears the announcements
    /// the test hands its backend, and its subscription folds to the store's fetch.
    private func withStores(_ body: (Store, Store, AnnouncingMemory, Locked<[Tally]>) throws -> Void) throws {
        let memory = MemoryBackend()
        defer { memory.close() }
        let mine = AnnouncingMemory(memory)
        let store = try Store(backend: mine, pollInterval: .seconds(3600), usesCommitSignal: false)
        let elsewhere = try Store(backend: memory, pollInterval: .seconds(3600), usesCommitSignal: false)
        defer {
            store.close()
            elsewhere.close()
        }
        let live = Locked<[Tally]>([])
        let differences = Locked(0)
        let subscription = store.differencesPublisher(for: FetchRequest<Tally>(sortBy: [.ascending(\.id)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { difference in
                live.withLock { $0 = $0.applying(difference) ?? $0 }
                differences.withLock { $0 += 1 }
            })
        defer { subscription.cancel() }
        // The first difference is the subscription's initial fetch, a read of its own: under
        // load it could come after the test's commits, counting a read the test did not make.
        #expect(eventuallyBlocking(timeout: .seconds(60)) { differences.withLock { $0 } > 0 })
        #expect(live.withLock { $0 }.isEmpty)
        // The poller probes once as it starts, on its own queue, and reads the log: under load
        // that read could come after the test's commits, counting a read the test did not make.
        #expect(eventuallyBlocking(timeout: .seconds(60)) {
            guard let before = mine.readsAtFirstToken.withLock({ $0 }) else { return false }
            return mine.reads.withLock { $0 } > before
        })
        // That read is made holding the store's write lock, which the poller keeps until its
        // catch-up has finished: a poll finding the lock taken reads once more to see whether
        // it must wait. A write takes the lock, so once one returns the catch-up is over.
        try store.write { _ in }
        try body(store, elsewhere, mine, live)
    }

    /// `elsewhere`'s commit of `tallies`, with the announcement its writer would send.
    private func commit(_ elsewhere: Store, _ tallies: [Tally], previous: CommitPosition) throws -> (CommitAnnouncement, CommitPosition) {
        let heard = Locked<ChangeSet?>(nil)
        let listen = elsewhere.changeSets.sink { changeSet in heard.withLock { $0 = changeSet } }
        defer { listen.cancel() }
        try elsewhere.write { tx in for tally in tallies { _ = try tx.upsert(tally) } }
        let changeSet = try #require(heard.withLock { $0 })
        return (try #require(CommitAnnouncement(previous: previous, changeSet: changeSet)), changeSet.position)
    }

    @Test("announced commits that follow on are published without a read; the subscription folds to the fetch")
    func announcedCommitsNeedNoRead() throws {
        try withStores { store, elsewhere, backend, live in
            let start = try store.backend.read { try $0.lastCommit() }
            let (first, after1) = try commit(elsewhere, [Tally(id: 1, value: 1)], previous: start)
            let (second, _) = try commit(elsewhere, [Tally(id: 1, value: 2), Tally(id: 2, value: 2)], previous: after1)
            backend.pending.withLock { $0 = HeardCommits(announcements: [first, second], isComplete: true) }
            let readsBefore = backend.reads.withLock { $0 }
            store.pollExternalChanges()
            #expect(backend.reads.withLock { $0 } == readsBefore, "a complete, following announcement needs no read")
            #expect(eventuallyBlocking(timeout: .seconds(60)) { live.withLock { $0 }.map(\.value) == [2, 2] }, "\(live.withLock { $0 })")
            #expect(try store.fetch(Tally.self).map(\.value) == [2, 2])
        }
    }

    @Test("nothing heard, announcements that are incomplete, skip a commit, or name another commit at a known position: the log is read instead")
    func otherwiseTheLogIsRead() throws {
        try withStores { store, elsewhere, backend, live in
            let start = try store.backend.read { try $0.lastCommit() }
            // Nothing heard (a timer's probe looking for what no signal told of).
            let (_, after0) = try commit(elsewhere, [Tally(id: 0, value: 0)], previous: start)
            backend.pending.withLock { $0 = HeardCommits(announcements: [], isComplete: true) }
            var readsBefore = backend.reads.withLock { $0 }
            store.pollExternalChanges()
            #expect(backend.reads.withLock { $0 } > readsBefore)
            #expect(eventuallyBlocking(timeout: .seconds(60)) { live.withLock { $0 }.map(\.id) == [0] })

            // Incomplete: something else moved the token too.
            let (first, after1) = try commit(elsewhere, [Tally(id: 1, value: 1)], previous: after0)
            backend.pending.withLock { $0 = HeardCommits(announcements: [first], isComplete: false) }
            readsBefore = backend.reads.withLock { $0 }
            store.pollExternalChanges()
            #expect(backend.reads.withLock { $0 } > readsBefore)
            #expect(eventuallyBlocking(timeout: .seconds(60)) { live.withLock { $0 }.map(\.id) == [0, 1] })

            // A gap: commit 2 was never announced, commit 3 was.
            let (_, after2) = try commit(elsewhere, [Tally(id: 2, value: 2)], previous: after1)
            let (third, after3) = try commit(elsewhere, [Tally(id: 3, value: 3)], previous: after2)
            backend.pending.withLock { $0 = HeardCommits(announcements: [third], isComplete: true) }
            readsBefore = backend.reads.withLock { $0 }
            store.pollExternalChanges()
            #expect(backend.reads.withLock { $0 } > readsBefore)
            #expect(eventuallyBlocking(timeout: .seconds(60)) { live.withLock { $0 }.map(\.id) == [0, 1, 2, 3] }, "\(live.withLock { $0 })")

            // The commit at the store's position, but another one (a rewound history): read.
            let impostor = try #require(CommitAnnouncement(previous: after2, changeSet: ChangeSet(
                sequence: after3.sequence, entities: [EntityChanges(entity: "tallies", inserted: [RowChange(id: .integer(9), row: Row(columns: ["id", "value"], values: [.integer(9), .integer(9)]))])],
                commit: after3.commit &+ 1)))
            backend.pending.withLock { $0 = HeardCommits(announcements: [impostor], isComplete: true) }
            readsBefore = backend.reads.withLock { $0 }
            store.pollExternalChanges()
            #expect(backend.reads.withLock { $0 } > readsBefore)
            #expect(try store.fetch(Tally.self).map(\.id) == [0, 1, 2, 3])
            #expect(live.withLock { $0 }.map(\.id) == [0, 1, 2, 3])
        }
    }
}
