import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import Testing

/// Every conformance case against `lmdb:` in a fresh temporary directory.
let lmdbHarness = ConformanceHarness(
    registry: BackendRegistry([.lmdb]),
    freshConfiguration: {
        let directory = FileManager.default.temporaryDirectory.path + "/reservoir-lmdb-conformance-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return "lmdb:\(directory)/env"
    },
    cleanup: { configuration in
        guard let parsed = try? StoreConfiguration(configuration) else { return }
        let directory = (parsed.location as NSString).deletingLastPathComponent
        try? FileManager.default.removeItem(atPath: directory)
    },
    shortChangeLog: "retention=5"
)

@Test(arguments: ConformanceSuite.cases)
func conformance(_ testCase: ConformanceCase) async throws {
    if case let .skipped(reason) = try await testCase.run(using: lmdbHarness) {
        withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + reason)) }
    }
}
