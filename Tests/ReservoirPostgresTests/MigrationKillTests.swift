import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// ReservoirFaultTests' migration SIGKILL trials on PostgreSQL: the migrating client is
/// ReservoirPostgresTestHelper, killed at random moments of its migration while the server goes
/// on; the server must then roll the migration's transaction back or have committed it whole,
/// so each store is found wholly at version 1 or wholly at version 2. `RESERVOIR_FAULT_TRIALS`
/// sets the trials (8 by default) and `RESERVOIR_MIGRATION_RECORDS` the records (2,000).
@Suite("PostgreSQL: a client killed while it migrates")
struct PostgresMigrationKillTests {
    static let trials = CrashConsistency.trials(default: 8)
    static let records = ProcessInfo.processInfo.environment["RESERVOIR_MIGRATION_RECORDS"].flatMap { Int($0) } ?? 2000

    @Test func killedMigrationsLeaveOneVersion() async throws {
        let stores = Locked<[String]>([])
        defer { for configuration in stores.withLock({ $0 }) { TestServer.drop(configuration) } }
        let test = MigrationCrash(child: try ChildProcess.builtExecutable("ReservoirPostgresTestHelper"), registry: TestServer.registry)
        let report = try await test.run(records: Self.records, trials: Self.trials, seed: 6) { _ in
            let configuration = try TestServer.freshStore()
            stores.withLock { $0.append(configuration) }
            return configuration
        }
        print("migration kills, postgres: \(report)")
        #expect(report.trials == Self.trials)
        #expect(report.killedWhileMigrating > 0, "no kill landed while the migration ran")
    }
}
