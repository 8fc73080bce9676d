import Foundation
import Observation
import Reservoir
import Testing

private struct Entry: Storable {
    var id: Int
    var text: String
    static let schema = Schema<Entry>("entries", fields: [.field(\.text)])
}

/// A replica's status as a publisher and as an `@Observable` object (the conformance suite's
/// `sync` group covers the replica itself on every backend).
@Suite("Sync status")
struct SyncStatusTests {
    @Test @MainActor
    func theObservableStatusFollowsPulls() throws {
        let remote = try Store.open("memory:")
        let local = try Store.open("memory:")
        defer { remote.close(); local.close() }
        try remote.write { tx in try tx.insert(Entry(id: 1, text: "one")) }
        let sync = try Sync(local: local, remote: remote)
        var sent: [SyncStatus] = []
        let statuses = sync.statusPublisher.sink { sent.append($0) }
        defer { statuses.cancel() }
        let live = sync.live()
        let changed = Locked(0)
        withObservationTracking { _ = live.status } onChange: { changed.withLock { $0 += 1 } }
        try sync.pull()
        #expect(changed.withLock { $0 } == 1, "the observable status changed on the main actor")
        let newest = try remote.currentHistoryToken
        #expect(live.status.isConnected && live.status.token == newest && live.status.lastError == nil)
        #expect(sent.first?.token == nil && sent.last?.token == live.status.token, "the publisher sent the status before and after: \(sent)")
        try remote.write { tx in try tx.insert(Entry(id: 2, text: "two")) }
        try sync.pull()
        let after = try remote.currentHistoryToken
        #expect(live.status.changeSetsPulled == 1 && live.status.token == after)
        #expect(try local.fetch(Entry.self).map(\.id) == [1, 2])
    }
}
