import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirPostgres
import ReservoirSQLite
import Testing

/// Sync clients SIGKILLed mid-write, mid-push and mid-pull (``SyncClientKill``): a SQLite and an
/// LMDB client process reach the test server through a TCP proxy that sometimes cuts a `COMMIT`
/// (before it reaches the server, or after, losing only the answer), while the test edits their
/// records on the server. `RESERVOIR_FAULT_TRIALS` sets the trials (10 by default; scripts/test-deep
/// runs 100).
@Suite("PostgreSQL: sync clients killed while syncing")
struct SyncClientKillTests {
    static let trials = CrashConsistency.trials(default: 10)

    @Test func killedClientsConvergeAndApplyEachBatchOnce() async throws {
        let (remote, cutter, direct) = try TCPCutter.inFrontOfFreshStore("timeout=5")
        defer { TestServer.drop(direct) }
        defer { cutter.stop() }
        let temporary = try TemporaryDirectory("reservoir-sync-kill")
        defer { temporary.cleanUp() }
        let locals = ["sqlite:" + temporary.file("a.sqlite"), "lmdb:" + temporary.file("b.lmdb")]
        let test = SyncClientKill(child: try ChildProcess.builtExecutable("ReservoirPostgresTestHelper"),
                                  registry: BackendRegistry([.postgres, .sqlite, .lmdb]))
        let report = try await test.run(remote: remote, direct: direct, locals: locals, trials: Self.trials, seed: 11) { random in
            switch random % 4 {
            case 1: cutter.arm(.beforeCommitSent)
            case 2: cutter.arm(.afterCommitSent)
            default: cutter.disarm()
            }
        }
        print("sync client kills, postgres: \(report), \(cutter.cutCount) COMMITs cut")
        #expect(report.trials == Self.trials && report.kills == 2 * Self.trials)
        #expect(report.recordsWritten > 0 && report.rounds > 0 && report.serverEdits > 0, "\(report)")
    }
}
