import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// The environment stays readable by LMDB's own tools (Debian: lmdb-utils).
@Suite struct ToolsTests {
    static func run(_ tool: String, _ arguments: [String]) async throws -> (Int32, String) {
        let process = try ChildProcess(URL(fileURLWithPath: tool), arguments)
        let status = await process.waitForExit(within: 60)
        return (status ?? -1, process.outputText)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/mdb_stat") && FileManager.default.isExecutableFile(atPath: "/usr/bin/mdb_dump"),
                   "needs mdb_stat and mdb_dump (apt-get install lmdb-utils)"))
    func mdbStatAndMdbDumpReadTheEnvironment() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        try await store.write { tx in for i in 1...5 { try tx.insert(Note(id: i, title: "n\(i)", priority: i)) } }
        let (statStatus, stat) = try await Self.run("/usr/bin/mdb_stat", ["-a", dir.path + "/env"])
        #expect(statStatus == 0)
        for name in ["rows/notes", "index/notes/priority", "index/notes/score", "log", "meta"] {
            #expect(stat.contains("Status of \(name)"), "mdb_stat output: \(stat)")
        }
        let (dumpStatus, dump) = try await Self.run("/usr/bin/mdb_dump", ["-a", "-p", dir.path + "/env"])
        #expect(dumpStatus == 0)
        #expect(dump.contains("database=rows/notes") && dump.contains("n3"))
    }
}
