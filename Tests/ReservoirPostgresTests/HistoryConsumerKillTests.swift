import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// ReservoirFaultTests' history-consumer SIGKILL trials on PostgreSQL: the consumer is
/// ReservoirPostgresTestHelper, a client of the test server like any app process, killed while
/// it consumes the history of a store the test keeps writing to. `RESERVOIR_FAULT_TRIALS` sets
/// the trials (15 by default; scripts/test-deep runs 100).
@Suite("PostgreSQL: history consumer killed while consuming")
struct PostgresHistoryConsumerKillTests {
    static let trials = CrashConsistency.trials(default: 15)

    @Test func killedConsumersApplyEachChangeSetOnce() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let temporary = try TemporaryDirectory("reservoir-history-kill")
        defer { temporary.cleanUp() }
        let test = HistoryConsumerKill(child: try ChildProcess.builtExecutable("ReservoirPostgresTestHelper"), registry: TestServer.registry)
        let report = try await test.run(configuration: configuration, consumerFile: temporary.file("consumer.log"), trials: Self.trials, seed: 5)
        print("history consumer kills, postgres: \(report)")
        #expect(report.trials == Self.trials)
        #expect(report.changeSetsApplied == report.changeSetsCommitted)
        #expect(report.killedBehind > 0, "no kill landed while the consumer was behind the writer")
    }
}
