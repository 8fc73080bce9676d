import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// A data.mdb shorter than its pages once crashed the process with SIGBUS on the first
/// read of a missing page; it must be a `.corrupt` error naming the file instead, both when
/// the file was truncated while no store had it open and while one does.
@Suite struct DamagedFileTests {
    /// An environment of a few hundred notes; returns data.mdb's path and size.
    func makeEnvironment(_ dir: TemporaryDirectory) throws -> (path: String, size: Int) {
        let store = try openStore("lmdb:\(dir.path)/env")
        try store.write { tx in
            for id in 0..<400 { try tx.insert(Note(id: id, title: String(repeating: "note \(id) ", count: 8), priority: id % 7, tag: "t\(id % 3)")) }
        }
        store.close()
        let path = dir.path + "/env/data.mdb"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
        return (path, size)
    }

    @Test(arguments: [2, 4, 8])
    func aTruncatedEnvironmentIsReportedNotACrash(keepingOneIn fraction: Int) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let (path, size) = try makeEnvironment(dir)
        let kept = max(16_384, size / fraction / 4096 * 4096)
        try #require(kept < size, "the environment (\(size) bytes) must be larger than what is kept")
        #expect(truncate(path, off_t(kept)) == 0)
        let error = try #require(throws: ReservoirError.self) {
            let store = try openStore("lmdb:\(dir.path)/env")
            defer { store.close() }
            _ = try store.fetch(Note.self)
        }
        #expect(error.code == .corrupt || error.code == .cannotOpen, "\(error)")
        #expect(error.message.contains(dir.path), "\(error)")
    }

    @Test func truncationUnderAnOpenStoreFailsTheNextTransactions() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let (path, size) = try makeEnvironment(dir)
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        #expect(try store.count(FetchRequest<Note>()) == 400)
        #expect(truncate(path, off_t(max(16_384, size / 2 / 4096 * 4096))) == 0)
        let read = try #require(throws: ReservoirError.self) { try store.fetch(Note.self) }
        #expect(read.code == .corrupt && read.message.contains("data.mdb") && read.message.contains("truncated"), "\(read)")
        let write = try #require(throws: ReservoirError.self) {
            try store.write { tx in try tx.insert(Note(id: 1000, title: "after")) }
        }
        #expect(write.code == .corrupt, "\(write)")
    }
}
