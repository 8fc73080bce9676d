import Reservoir
@testable import ReservoirConformance
import Testing

/// The shrinking the generated tests report failures with, and the sync convergence test's
/// replay of a sequence written out.
@Suite("Differential: shrinking and replaying")
struct ShrinkingTests {
    @Test func chunksAreRemovedDownToTheStepsThatFail() {
        // Fails once a 3 has come and later a 7: the shortest failing sequence is [3, 7].
        let failing = Array(0..<40).map { $0 % 10 }
        func failureIndex(_ steps: [Int]) -> Int? {
            guard let three = steps.firstIndex(of: 3) else { return nil }
            return steps[three...].firstIndex(of: 7)
        }
        var runs = 0
        let shrunk = SequenceShrinker.removingChunks(failing, runs: &runs, maxRuns: 500, failureIndex: failureIndex)
        #expect(shrunk == [3, 7])
        #expect(runs > 0 && runs <= 500)

        var capped = 0
        let partly = SequenceShrinker.removingChunks(failing, runs: &capped, maxRuns: 3, failureIndex: failureIndex)
        #expect(capped == 3)
        #expect(failureIndex(partly) != nil, "what is left after the runs ran out still fails: \(partly)")
    }

    @Test func aSyncSequenceWrittenOutReplays() throws {
        let test = SyncConvergenceTest(backends: [DifferentialBackend("memory", harness: .memory)])
        try test.replay([
            SyncConvergenceStep(replica: 0, id: 1, action: .set("a", .integer(1))),
            SyncConvergenceStep(replica: 0, id: 1, action: .serverSet("b", .text("t2"))),
            SyncConvergenceStep(replica: 0, id: 1, action: .pushAnswerLost),
            SyncConvergenceStep(replica: 0, id: 2, action: .serverDelete),
            SyncConvergenceStep(replica: 0, id: 1, action: .round),
            SyncConvergenceStep(replica: 0, id: 1, action: .restart),
        ])
        let wrong = [SyncConvergenceStep(replica: 3, id: 1, action: .push)]
        #expect(throws: SyncConvergenceFailure.self) { try test.replay(wrong) }
    }
}
