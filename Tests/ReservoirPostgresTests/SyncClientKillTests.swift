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

    /// The same, with the server itself crashed (`pg_ctl stop -m immediate`: no checkpoint,
    /// recovery at the restart) and restarted while the clients write, push and pull, in about
    /// a third of the trials; a cluster of the test's own, with fsync on.
    @Test func killedClientsConvergeAcrossServerCrashes() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let direct = cluster.url + "?schema=sync_kill&timeout=5"
        let cutter = try TCPCutter(upstreamPort: cluster.port)
        defer { cutter.stop() }
        guard var components = URLComponents(string: direct) else { throw ReservoirError(.invalidConfiguration, "\(direct)") }
        components.port = Int(cutter.port)
        let remote = try #require(components.string)
        let temporary = try TemporaryDirectory("reservoir-sync-crash")
        defer { temporary.cleanUp() }
        let locals = ["sqlite:" + temporary.file("a.sqlite"), "lmdb:" + temporary.file("b.lmdb")]
        let test = SyncClientKill(child: try ChildProcess.builtExecutable("ReservoirPostgresTestHelper"),
                                  registry: BackendRegistry([.postgres, .sqlite, .lmdb]))
        let restarts = Locked(0)
        let started = Locked(0)
        let failures = Locked<[String]>([])
        let restarting = DispatchGroup()
        let trials = max(3, Self.trials / 2)
        let report = try await test.run(remote: remote, direct: direct, locals: locals, trials: trials, seed: 12, serverOutages: true) { random in
            restarting.wait()  // the last crash's restart has finished
            let trial = started.withLock { count in
                defer { count += 1 }
                return count
            }
            // The first trial and about a third of the rest; never before the last rounds (0).
            guard random != 0, trial == 0 || random % 3 == 0 else { return }
            DispatchQueue.global().async(group: restarting) {
                usleep(UInt32(20_000 + random % 200_000))
                do {
                    try cluster.stop("immediate")
                    try cluster.start()
                    restarts.withLock { $0 += 1 }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        print("sync client kills across server crashes: \(report), \(restarts.withLock { $0 }) server crashes and restarts")
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(restarts.withLock { $0 } > 0, "no trial crashed the server")
        #expect(report.trials == trials && report.rounds > 0 && report.recordsWritten > 0, "\(report)")
    }
}
