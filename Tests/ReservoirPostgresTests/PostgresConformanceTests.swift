import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// The conformance suite against `postgres://`, a fresh schema of the test server per
/// case (dropped afterwards), one test case per conformance case.
@Suite("Conformance: postgres:")
struct PostgresConformanceTests {
    static let harness = ConformanceHarness(
        registry: TestServer.registry,
        freshConfiguration: { try TestServer.freshStore() },
        cleanup: { TestServer.drop($0) },
        shortChangeLog: "retention=5"
    )

    @Test(arguments: ConformanceSuite.cases)
    func conformance(_ testCase: ConformanceCase) async throws {
        if case let .skipped(reason) = try await testCase.run(using: Self.harness) {
            // Shown as a known issue, so a skipped case is counted and named, never passed silently.
            withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + reason)) }
        }
    }
}
