import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite
import Testing

/// SIGKILL at random moments while a child process commits, on every persistent backend
/// and durability level: nothing reported as committed is lost, nothing half-committed is
/// seen. `RESERVOIR_FAULT_TRIALS` sets the trials per backend and level (25 by default).
@Suite("Crash consistency: SIGKILL during commits", .serialized)
struct CrashConsistencyTests {
    static let trials = CrashConsistency.trials()

    @Test(arguments: ["sqlite", "lmdb"], ["normal", "full"])
    func killedWritersLoseNothing(scheme: String, durability: String) async throws {
        let temporary = try TemporaryDirectory("reservoir-crash")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let configuration = "\(scheme):\(directory)/\(scheme == "sqlite" ? "db.sqlite" : "env")?durability=\(durability)"
        let test = CrashConsistency(child: try ChildProcess.builtExecutable("ReservoirFaultTestHelper"), registry: BackendRegistry([.sqlite, .lmdb]))
        let report = try await test.run(configuration: configuration, trials: Self.trials, seed: scheme == "sqlite" ? 1 : 2)
        print("crash consistency, \(scheme) durability=\(durability): \(report)")
        #expect(report.trials == Self.trials)
        #expect(report.commitsFound >= report.commitsReported)
        #expect(report.killedMidRun > 0, "no kill landed while the child was committing")
    }
}
