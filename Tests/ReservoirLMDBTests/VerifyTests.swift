import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// A zeroed page once made LMDB abort (`IS_LEAF(mp)`) or fault: it must be refused at open,
/// and found by `verify()` (which reads pages with `pread`, never through the map) when the
/// damage came after opening. Larger environments: `DamagedFileTests`.
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

    @Test func verifyFindsAPageZeroedUnderAnOpenStore() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        try store.write { tx in for id in 0..<300 { try tx.insert(Note(id: id, title: "note \(id)", priority: id % 5)) } }
        #expect(try store.verify().isIntact)
        // Damage made after opening is not seen by the open check; verify() reads the pages anew.
        let path = dir.path + "/env/data.mdb"
        try zero(page: try mainRoot(path), of: path)
        let report = try store.verify()
        #expect(!report.isIntact && !report.recordsRead, "\(report)")
        #expect(report.problems.contains { $0.contains("data.mdb") && $0.contains("page") }, "\(report.problems)")
    }
}
