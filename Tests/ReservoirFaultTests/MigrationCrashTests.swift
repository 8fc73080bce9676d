import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite
import Testing

/// SIGKILL at random moments while a child process migrates a store: afterwards it is wholly
/// at the old version or wholly at the new one. `RESERVOIR_FAULT_TRIALS` sets the trials per
/// backend (8 by default) and `RESERVOIR_MIGRATION_RECORDS` the records (2,000 by default;
/// `scripts/test-deep` style runs use 100,000).
@Suite("Crash consistency: SIGKILL during a migration", .serialized)
struct MigrationCrashTests {
    static let trials = CrashConsistency.trials(default: 8)
    static let records = ProcessInfo.processInfo.environment["RESERVOIR_MIGRATION_RECORDS"].flatMap { Int($0) } ?? 2000

    @Test(arguments: ["sqlite", "lmdb"])
    func killedMigrationsLeaveOneVersion(scheme: String) async throws {
        let test = MigrationCrash(child: try ChildProcess.builtExecutable("ReservoirFaultTestHelper"), registry: BackendRegistry([.sqlite, .lmdb]))
        let report = try await test.run(scheme: scheme, file: scheme == "sqlite" ? "db.sqlite" : "env", records: Self.records,
                                        trials: Self.trials, seed: scheme == "sqlite" ? 3 : 4)
        print("migration crash consistency, \(scheme): \(report)")
        #expect(report.trials == Self.trials)
        #expect(report.killedWhileMigrating > 0, "no kill landed while the migration ran")
    }
}
