import Foundation
import Reservoir
import ReservoirConformance
import Testing

/// A store whose newest commits are lost (an older copy restored under live stores, as a
/// backup restore, or no fsync and a power loss, leaves it) hands their sequence numbers out
/// again: ``LostTail``, with the loss made by the test helper process, which copies the
/// environment (`mdb_env_copy`) and later writes the copy's contents back over every named
/// database in one raw write transaction (#30 item 1).
@Suite struct LostTailTests {
    static func helper(_ mode: String, _ environment: String, _ copy: String) throws {
        let child = try ChildProcess(built: "ReservoirLMDBTestHelper", [mode, environment, copy])
        guard child.waitUntilExit(within: 60) == 0 else {
            throw ReservoirError(.backend, "the helper's \(mode) failed: \(child.outputText) \(child.errorText)")
        }
    }

    @Test(.timeLimit(.minutes(5)), arguments: LostTail.After.allCases)
    func aLiveWatchReReadsWhenCommitsItSawAreLost(after: LostTail.After) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.file("env")
        let copy = directory.file("copy")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        let watcher = try openStore("lmdb:\(path)")
        defer { watcher.close() }
        let other = try openStore("lmdb:\(path)")
        defer { other.close() }
        let problems = try await LostTail.run(
            after: after, watcher: watcher, other: other, losing: other,
            prepare: { try Self.helper("backup", path, copy) },
            lose: { try Self.helper("restore", path, copy) })
        #expect(problems.isEmpty, "\(problems)")
    }
}
