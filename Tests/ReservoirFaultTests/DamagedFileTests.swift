import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite
import Testing

/// Damaged copies of a real store on every persistent backend (truncated, bits flipped, a
/// page zeroed; data, lock and log files) are opened, read, written, read again, verified
/// and reopened in a child process: every step works or throws a `ReservoirError` naming
/// the store; no crash, no hang. `RESERVOIR_FAULT_MUTANTS` sets the mutants per backend
/// (500 by default).
@Suite("Damaged files: never a crash", .serialized)
struct DamagedFileTests {
    static let mutants = ProcessInfo.processInfo.environment["RESERVOIR_FAULT_MUTANTS"].flatMap { Int($0) } ?? 500

    @Test(arguments: ["sqlite", "lmdb"])
    func damagedStoresFailCleanly(scheme: String) async throws {
        let temporary = try TemporaryDirectory("reservoir-damage")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let configuration = "\(scheme):\(directory)/\(scheme == "sqlite" ? "db.sqlite" : "env")"
        let test = DamagedFiles(child: try ChildProcess.builtExecutable("ReservoirFaultTestHelper"), registry: BackendRegistry([.sqlite, .lmdb]))
        let report = try await test.run(configuration: configuration, mutants: Self.mutants, seed: scheme == "sqlite" ? 11 : 12)
        print("damaged files, \(scheme): \(report)")
        for crash in report.crashes.prefix(20) { print("  crash: \(crash)") }
        #expect(report.mutants == Self.mutants)
        #expect(report.operations > report.mutants, "the mutants were exercised")
        #expect(report.crashes.count == 0, "\(report.crashes.count) crashes, first: \(report.crashes.prefix(3))")
        #expect(report.hangs.count == 0, "\(report.hangs.prefix(5))")
        #expect(report.badErrors.count == 0, "\(report.badErrors.prefix(5))")
    }
}
