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
/// (500 by default) on a small store; LMDB stores above 8 MiB get a share of it besides.
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

    /// LMDB stores above 8 MiB, once opened after checking only their roots, and crashed by
    /// a damaged page deep in a tree (issue #30: 4 crashes in 20 mutants at 9.6 MB, 1 in 10
    /// at 34 MB). Mutants: RESERVOIR_FAULT_MUTANTS / 25 at 9.6 MB and / 50 at 34 MB (20 and
    /// 10 by default), about a second each.
    @Test(arguments: [
        (DamagedFiles.Size(notes: 30_000, titleRepeats: 20), 25, 8 << 20),
        (DamagedFiles.Size(notes: 60_000, titleRepeats: 40), 50, 25_000_000),
    ])
    func largeLMDBStoresFailCleanly(size: DamagedFiles.Size, shareDivisor: Int, atLeast bytes: Int) async throws {
        let temporary = try TemporaryDirectory("reservoir-damage-large")
        defer { temporary.cleanUp() }
        let test = DamagedFiles(child: try ChildProcess.builtExecutable("ReservoirFaultTestHelper"), registry: BackendRegistry([.lmdb]))
        let mutants = max(1, Self.mutants / shareDivisor)
        let report = try await test.run(configuration: "lmdb:\(temporary.path)/env", mutants: mutants, seed: 13 + UInt64(shareDivisor), size: size, timeout: 120)
        print("damaged files, lmdb, \(size): \(report)")
        for crash in report.crashes.prefix(20) { print("  crash: \(crash)") }
        #expect(report.storeBytes > bytes, "the store (\(report.storeBytes) bytes, \(size)) must be above \(bytes) bytes")
        #expect(report.mutants == mutants)
        #expect(report.operations > report.mutants, "the mutants were exercised")
        #expect(report.crashes.count == 0, "\(report.crashes.count) crashes, first: \(report.crashes.prefix(3))")
        #expect(report.hangs.count == 0, "\(report.hangs.prefix(5))")
        #expect(report.badErrors.count == 0, "\(report.badErrors.prefix(5))")
    }
}
