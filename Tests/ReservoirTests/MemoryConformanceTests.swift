import Reservoir
import ReservoirConformance
import Testing

/// The conformance suite against `memory:`, one test case per conformance case.
@Suite("Conformance: memory:")
struct MemoryConformanceTests {
    static let harness = ConformanceHarness(registry: BackendRegistry(), freshConfiguration: { "memory:" }, shortChangeLog: "retention=5")

    @Test(arguments: ConformanceSuite.cases)
    func conformance(_ testCase: ConformanceCase) async throws {
        if case let .skipped(reason) = try await testCase.run(using: Self.harness) {
            // Shown as a known issue, so a skipped case is counted and named, never passed silently.
            withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + reason)) }
        }
    }
}
