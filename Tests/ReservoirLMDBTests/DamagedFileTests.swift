import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// A data.mdb shorter than its pages once crashed the process with SIGBUS on the first
/// read of a missing page; it must be a `.corrupt` error naming the file instead, both when
/// the file was truncated while no store had it open and while one does. A damaged page
/// anywhere, in an environment of any size, is refused at open (issue #30: above 2,048 pages
/// only the roots were checked, and reading or writing crashed); the store is used in a
/// child process, so a crash fails the test instead of ending the runner.
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

    // MARK: - Damaged pages, in a child process

    /// Runs the helper's `use` mode (read every note, rewrite each, read again) on the
    /// environment at `path`; returns its exit status, or records the signal that killed it.
    func use(_ path: String) async throws -> (status: Int32?, said: String) {
        let child = try ChildProcess(built: "ReservoirLMDBTestHelper", ["use", "lmdb:\(path)"], environment: ["SWIFT_BACKTRACE": "enable=no"],
                                     standardError: .captured)
        let status = await child.waitForExit(within: 300)
        #expect(child.terminationSignal == nil, "the child died of signal \(child.terminationSignal ?? 0): \(child.errorText.suffix(300))")
        return (status, child.outputText + child.errorText)
    }

    /// Flips page `page`'s header the way `damage` names.
    func damage(_ damage: String, page: Int, of path: String) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        switch damage {
        case "zeroed":
            try handle.seek(toOffset: UInt64(page * 4096))
            try handle.write(contentsOf: Data(count: 4096))
        case "overwritten by the next page":
            try handle.seek(toOffset: UInt64((page + 1) * 4096))
            let next = try #require(try handle.read(upToCount: 4096))
            try handle.seek(toOffset: UInt64(page * 4096))
            try handle.write(contentsOf: next)
        case "marked dirty":
            // P_DIRTY (0x10) in mp_flags: LMDB clears it before writing a page, and a writer
            // takes a page carrying it for its own copy and writes into the read-only map.
            try handle.seek(toOffset: UInt64(page * 4096 + 10))
            let flags = try #require(try handle.read(upToCount: 1)?.first)
            try handle.seek(toOffset: UInt64(page * 4096 + 10))
            try handle.write(contentsOf: [flags | 0x10])
        default:
            Issue.record("unknown damage \(damage)")
        }
    }

    /// 12,000 notes of 700 bytes in four commits: about 10 MB.
    func makeLargeEnvironment(_ dir: TemporaryDirectory) throws {
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        let title = String(repeating: "x", count: 700)
        for batch in 0..<4 {
            try store.write { tx in for id in (batch * 3000)..<(batch * 3000 + 3000) { try tx.insert(Note(id: id, title: title, priority: id % 5)) } }
        }
    }

    @Test(arguments: ["zeroed", "overwritten by the next page", "marked dirty"])
    func aDamagedPageDeepInALargeEnvironmentIsRefusedAtOpen(_ kind: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        try makeLargeEnvironment(dir)
        let path = dir.path + "/env/data.mdb"
        let pages = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue / 4096
        try #require(pages > 2048, "the environment (\(pages) pages) must be above 8 MiB, where opening once checked only the roots")
        // An undamaged copy is used without error.
        try FileManager.default.createDirectory(atPath: dir.path + "/intact", withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: path, toPath: dir.path + "/intact/data.mdb")
        let intact = try await use(dir.path + "/intact")
        #expect(intact.status == 0 && intact.said.contains("wrote 12000"), "\(intact.said)")
        // From the middle on, the first of the rows' leaves (a leaf page holding titles), which a
        // full fetch and a rewrite follow.
        let data = try #require(FileManager.default.contents(atPath: path))
        let page = try #require((pages / 2..<pages).first { page in
            let base = page * 4096
            let number = (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[base + $1]) << (8 * $1) }
            return number == UInt64(page) && data[base + 10] == 0x02 && data[base + 11] == 0
                && String(decoding: data[base..<(base + 4096)], as: UTF8.self).contains(String(repeating: "x", count: 64))
        }, "no leaf of titles from page \(pages / 2) on")
        try damage(kind, page: page, of: path)
        let damaged = try await use(dir.path + "/env")
        #expect(damaged.status == 2 && damaged.said.contains("data.mdb is damaged") && damaged.said.contains(dir.path)
                && !damaged.said.split(separator: "\n").contains { $0.hasPrefix("read ") }, "page \(page) of \(pages) \(kind): \(damaged.said)")
    }

    @Test func aLeafPageMarkedDirtyInASmallEnvironmentIsRefusedAtOpen() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let (path, size) = try makeEnvironment(dir)
        // Every page whose header says "leaf page N" at page N, so the rows' leaves among them.
        var marked = 0
        let data = try #require(FileManager.default.contents(atPath: path))
        for page in 2..<(size / 4096) {
            let base = page * 4096
            let number = (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[base + $1]) << (8 * $1) }
            guard number == UInt64(page), data[base + 10] == 0x02, data[base + 11] == 0 else { continue }
            try damage("marked dirty", page: page, of: path)
            marked += 1
        }
        try #require(marked > 0, "no leaf page found in \(size / 4096) pages")
        let damaged = try await use(dir.path + "/env")
        #expect(damaged.status == 2 && damaged.said.contains("data.mdb is damaged") && damaged.said.contains("flags 18"), "\(marked) pages: \(damaged.said)")
    }

    /// mdb_env_open takes the page size from the meta pages unchecked: 0 divided by zero
    /// (SIGFPE, exit 136, with the previous code and with mdb_stat); 4,097 was refused as "not
    /// an LMDB file". 8,192 makes LMDB look for the second meta page where there is none,
    /// which it refuses itself.
    @Test(arguments: [(UInt32(0), true), (UInt32(4097), true), (UInt32(8192), false)])
    func aDamagedMetaPageSizeIsRefusedBeforeLMDBReadsIt(pageSize: UInt32, namedByTheCheck: Bool) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let (path, _) = try makeEnvironment(dir)
        // mm_psize: the free-page database record's md_pad, 24 bytes into meta page 0's body.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 16 + 24)
        try handle.write(contentsOf: withUnsafeBytes(of: pageSize.littleEndian) { Data($0) })
        try handle.close()
        let damaged = try await use(dir.path + "/env")
        #expect(damaged.status == 2 && damaged.said.contains(dir.path), "page size \(pageSize): \(damaged.said)")
        if namedByTheCheck {
            #expect(damaged.said.contains("data.mdb is damaged: meta page 0 gives an impossible page size (\(pageSize))"), "\(damaged.said)")
        }
    }
}
