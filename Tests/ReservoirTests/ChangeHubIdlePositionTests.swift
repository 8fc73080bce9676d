import Foundation
@testable import Reservoir
import Testing

/// `ChangeHub.idlePosition`, which a following replica anchors its chain of heard change sets
/// on: the hub's position only while nothing is waiting to be delivered.
@Suite("Change hub: the position while nothing is on its way")
struct ChangeHubIdlePositionTests {
    @Test func thePositionIsGivenOnlyWhileNothingWaits() {
        let start = CommitPosition(sequence: 1, commit: 11)
        let hub = ChangeHub(after: start, identity: nil)
        #expect(hub.idlePosition == start)
        let changes = EntityChanges(entity: "notes", inserted: [RowChange(id: .integer(2), row: Row([("id", .integer(2))]))])
        let ticket = hub.enqueue(ChangeSet(sequence: 2, entities: [changes], commit: 12))
        // Enqueued, not delivered: an observer added now would still hear it.
        #expect(hub.idlePosition == nil)
        hub.deliver(through: ticket ?? 0)
        #expect(hub.idlePosition == CommitPosition(sequence: 2, commit: 12))
        hub.skip(through: CommitPosition(sequence: 3, commit: 13))
        #expect(hub.idlePosition == CommitPosition(sequence: 3, commit: 13))
    }
}
