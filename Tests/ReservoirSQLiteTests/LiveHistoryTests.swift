import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// The live history of another store's commits, made deterministic: the watching store probes
/// only when told, so it finds two commits at once, the second deleting one of the records the
/// first inserted.
/// (Found by `HistoryConsumerKill`: the change set built for the first lacked the insert.)
@Suite("SQLite: live history of another store's commits")
struct LiveHistoryTests {
    struct Entry: Storable {
        var id: Int
        var text: String
        static let schema = Schema<Entry>("entries", fields: [.field(\.text)])
    }

    @Test func aRecordDeletedByALaterCommitIsStillInTheChangeSetThatInsertedIt() async throws {
        let temporary = try TemporaryDirectory("reservoir-sqlite-live-history")
        defer { temporary.cleanUp() }
        let writer = try openStore(temporary.databasePath)
        defer { writer.close() }
        try await writer.write { try $0.insert(Entry(id: 0, text: "first")) }
        let configuration = try StoreConfiguration("sqlite:" + temporary.databasePath)
        // No commit signal and an hour between probes: it sees other commits when polled.
        let watcher = try Store(backend: sqliteRegistry.makeBackend(configuration), configuration: configuration,
                                pollInterval: .seconds(3600), usesCommitSignal: false)
        defer { watcher.close() }
        let received = Locked<[HistoryChangeSet]>([])
        let subscription = watcher.historyPublisher(after: try watcher.currentHistoryToken).sink(
            receiveCompletion: { _ in }, receiveValue: { changeSet in received.withLock { $0.append(changeSet) } })
        defer { subscription.cancel() }
        // An own commit, received live: the subscription has left the log for the live change sets.
        try await watcher.write { try $0.insert(Entry(id: 1, text: "own")) }
        #expect(await eventually { received.withLock { $0.count } == 1 })

        try await writer.write { tx in
            try tx.insert(Entry(id: 2, text: "inserted, then deleted"))
            try tx.insert(Entry(id: 3, text: "kept"))
        }
        try await writer.write { _ = try $0.delete(Entry.self, id: 2) }
        watcher.pollExternalChanges()
        #expect(await eventually { received.withLock { $0.count } == 3 })
        let changes = received.withLock { $0 }.map { $0.changes.map(\.description) }
        #expect(changes == [["entries 1 inserted"], ["entries 2 inserted", "entries 3 inserted"], ["entries 2 deleted"]])
    }
}
