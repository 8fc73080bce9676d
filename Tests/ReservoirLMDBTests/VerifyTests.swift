import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// A zeroed page once made LMDB abort (`IS_LEAF(mp)`) or fault: it must be refused at open
/// when the environment is small enough to check whole, and found by `verify()` (which reads
/// pages with `pread`, never through the map) when it is not.
@Suite struct VerifyTests {
    /// The newest meta page's record of the main database: its root page number.
    func mainRoot(_ path: String) throws -> Int {
        let data = try #require(FileManager.default.contents(atPath: path))
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[at + $1]) << (8 * $1) } }
        // Meta pages 0 and 1 (4 KiB pages here); the higher transaction id is the newest.
        let newest = u64(16 + 128) >= u64(4096 + 16 + 128) ? 0 : 4096
        return Int(u64(newest + 16 + 72 + 40))
    }

    func zero(page: Int, of path: String) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(page * 4096))
        try handle.write(contentsOf: Data(count: 4096))
    }

    @Test func aZeroedPageIsRefusedAtOpenNamingTheFile() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        try store.write { tx in for id in 0..<300 { try tx.insert(Note(id: id, title: "note \(id)", priority: id % 5)) } }
        #expect(try store.verify().isIntact)
        store.close()
        let path = dir.path + "/env/data.mdb"
        try zero(page: try mainRoot(path), of: path)
        let error = try #require(throws: ReservoirError.self) { try openStore("lmdb:\(dir.path)/env").close() }
        #expect(error.code == .corrupt && error.message.contains("data.mdb is damaged") && error.message.contains(dir.path), "\(error)")
    }

    @Test func verifyFindsAZeroedPageBeyondWhatOpeningChecks() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        let title = String(repeating: "x", count: 700)
        for batch in 0..<4 {
            try store.write { tx in for id in (batch * 3000)..<(batch * 3000 + 3000) { try tx.insert(Note(id: id, title: title, priority: id % 5)) } }
        }
        let intact = try store.verify()
        #expect(intact.isIntact, "\(intact.problems)")
        #expect(intact.entities.first { $0.name == "notes" }?.rows == 12_000)
        store.close()
        let path = dir.path + "/env/data.mdb"
        let pages = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue / 4096
        try #require(UInt64(pages) > LMDBEnvironment.fullCheckAtOpen, "the environment (\(pages) pages) must be larger than what opening checks whole")
        // A page in the middle: one of the rows' leaves, not a root, so opening does not look at it.
        try zero(page: pages / 2, of: path)
        let damaged = try openStore("lmdb:\(dir.path)/env")
        defer { damaged.close() }
        let report = try damaged.verify()
        #expect(!report.isIntact && !report.recordsRead, "\(report)")
        #expect(report.problems.contains { $0.contains("data.mdb") && $0.contains("page") }, "\(report.problems)")
    }
}
