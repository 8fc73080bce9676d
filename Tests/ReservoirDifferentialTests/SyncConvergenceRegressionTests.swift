import Reservoir
import ReservoirConformance
import Testing

/// Sequences the long generator run (`RESERVOIR_FUZZ_ITERATIONS=100000`) found, shrunk, on the
/// backends `scripts/test` runs (memory, SQLite, LMDB, LMDB with a small map, PostgreSQL). Each
/// failed before its fix: a record deleted on both sides left a base behind, and the delete it
/// stood for later deleted a record made anew under that id (or kept the replica without it).
@Suite("Differential: sync sequences the long run found")
struct SyncConvergenceRegressionTests {
    func replay(_ steps: [SyncConvergenceStep]) {
        do {
            try SyncConvergenceTest(backends: backends).replay(steps)
        } catch let failure as SyncConvergenceFailure {
            Issue.record(Comment(rawValue: failure.description))
        } catch {
            Issue.record(error)
        }
    }

    /// A replica following every entity (no shapes) read whole while the server had no row of
    /// the entity left: its local record, deleted on the server, stayed.
    @Test func anEntityTheServerNoLongerListsIsSettledToo() {
        replay([
            SyncConvergenceStep(replica: 4, id: 5, action: .set("c", .integer(67))),
            SyncConvergenceStep(replica: 4, id: 5, action: .push),
            SyncConvergenceStep(replica: 2, id: 5, action: .set("b", .integer(78))),
            SyncConvergenceStep(replica: 4, id: 5, action: .delete),
            SyncConvergenceStep(replica: 2, id: 6, action: .push),
            SyncConvergenceStep(replica: 4, id: 6, action: .round),
        ])
    }

    /// A first push comparing every record found nothing to send for a record deleted on both
    /// sides, but kept its base: when another replica made the id anew, this one kept it deleted.
    @Test func aDeleteFoundDoneByAWholePushIsNotPendingAfterwards() {
        replay([
            SyncConvergenceStep(replica: 1, id: 6, action: .serverSet("b", .integer(4))),
            SyncConvergenceStep(replica: 2, id: 2, action: .pull),
            SyncConvergenceStep(replica: 2, id: 6, action: .delete),
            SyncConvergenceStep(replica: 0, id: 6, action: .serverDelete),
            SyncConvergenceStep(replica: 1, id: 6, action: .set("c", .integer(62))),
            SyncConvergenceStep(replica: 2, id: 8, action: .pushAnswerLost),
        ])
    }

    /// A first pull (read whole) after a local delete of a record the server deleted too kept the
    /// delete pending, and it deleted the record another replica then made under that id.
    @Test func aReadWholeSettlesDeletesGoneOnBothSides() {
        replay([
            SyncConvergenceStep(replica: 4, id: 5, action: .set("c", .integer(67))),
            SyncConvergenceStep(replica: 4, id: 5, action: .push),
            SyncConvergenceStep(replica: 2, id: 5, action: .set("b", .integer(78))),
            SyncConvergenceStep(replica: 4, id: 5, action: .delete),
            SyncConvergenceStep(replica: 2, id: 5, action: .serverDelete),
            SyncConvergenceStep(replica: 4, id: 5, action: .pull),
            SyncConvergenceStep(replica: 2, id: 6, action: .push),
            SyncConvergenceStep(replica: 4, id: 6, action: .round),
        ])
    }

    /// The harness's own mistake, not the sync's: a batch found applied when sent again settled a
    /// record the server had deleted since to no base, so writing it again made it anew, which
    /// the harness's model took for an update of a deleted record and left out.
    @Test func aRecordMadeAgainAfterItsAppliedBatchSettledIsNew() {
        replay([
            SyncConvergenceStep(replica: 3, id: 2, action: .set("b", .integer(10))),
            SyncConvergenceStep(replica: 3, id: 3, action: .pushAnswerLost),
            SyncConvergenceStep(replica: 4, id: 2, action: .serverDelete),
            SyncConvergenceStep(replica: 3, id: 8, action: .push),
            SyncConvergenceStep(replica: 3, id: 2, action: .set("b", .integer(112))),
            SyncConvergenceStep(replica: 3, id: 3, action: .pushAnswerLost),
        ])
    }
}
