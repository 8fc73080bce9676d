// The sample of Sources/Reservoir/Reservoir.docc/WritingABackend.md, block for block as the
// article shows it (ArticleSampleTests checks that), so it compiles and runs as written.
// MyBackend.swift stands in for the author's backend.

import Reservoir

extension BackendFactory {
    static let mine = BackendFactory(scheme: "mine", summary: "mine:PATH[?durability=normal|full&retention=N]") { configuration in
        try configuration.checkOptions(allowed: ["durability", "retention"])
        let durability = try configuration.durability(default: .normal)
        let retention = try configuration.retention(default: 10_000)
        return try MyBackend(path: configuration.location, durability: durability, retention: retention)
    }
}

import ReservoirConformance
import Testing

let harness = ConformanceHarness.inTemporaryDirectories(registry: BackendRegistry([.mine]), scheme: "mine", file: "store")

@Test func certification() async throws {
    var certification = Certification(harness: harness, name: "mine:")
    certification.crashChild = try ChildProcess.builtExecutable("MineCrashChild")
    let report = await certification.run()
    for skip in report.skipped {
        withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + skip)) }
    }
    #expect(report.isCertified, "\(report)")
}
