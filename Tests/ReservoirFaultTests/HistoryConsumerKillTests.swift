import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite
import Testing

/// SIGKILL at random moments while a child process consumes the history of a store the test
/// keeps writing to, applying each change set to a file of its own: after every restart it has
/// applied each change set exactly once, in order. `RESERVOIR_FAULT_TRIALS` sets the trials per
/// backend (15 by default; PostgreSQL's are in ReservoirPostgresTests).
@Suite("History consumer: SIGKILL while consuming", .serialized)
struct HistoryConsumerKillTests {
    static let trials = CrashConsistency.trials(default: 15)

    @Test(arguments: ["sqlite", "lmdb"])
    func killedConsumersApplyEachChangeSetOnce(scheme: String) async throws {
        let temporary = try TemporaryDirectory("reservoir-history-kill")
        defer { temporary.cleanUp() }
        let configuration = "\(scheme):\(temporary.file(scheme == "sqlite" ? "db.sqlite" : "env"))"
        let test = HistoryConsumerKill(child: try ChildProcess.builtExecutable("ReservoirFaultTestHelper"), registry: BackendRegistry([.sqlite, .lmdb]))
        let report = try await test.run(configuration: configuration, consumerFile: temporary.file("consumer.log"), trials: Self.trials,
                                        seed: scheme == "sqlite" ? 3 : 4)
        print("history consumer kills, \(scheme): \(report)")
        #expect(report.trials == Self.trials)
        #expect(report.changeSetsApplied == report.changeSetsCommitted)
        #expect(report.killedBehind > 0, "no kill landed while the consumer was behind the writer")
    }
}
