import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// The conformance suite against `postgres://`, each case in a fresh schema of the test
/// server, dropped afterwards.
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
            withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + reason)) }
        }
    }
}
