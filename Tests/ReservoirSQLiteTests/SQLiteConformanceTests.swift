import Foundation
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// The conformance suite against `sqlite:`, file-backed in a fresh temporary directory
/// per case, one test case per conformance case.
@Suite("Conformance: sqlite:")
struct SQLiteConformanceTests {
    static let harness = ConformanceHarness.inTemporaryDirectories(
        registry: BackendRegistry([.sqlite]), scheme: "sqlite", file: "db.sqlite", shortChangeLog: "retention=5"
    )

    @Test(arguments: ConformanceSuite.cases)
    func conformance(_ testCase: ConformanceCase) async throws {
        if case let .skipped(reason) = try await testCase.run(using: Self.harness) {
            // Shown as a known issue, so a skipped case is counted and named, never passed silently.
            withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + reason)) }
        }
    }
}
