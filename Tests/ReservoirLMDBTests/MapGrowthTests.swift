import CLMDB
import Foundation
import OpenCombineShim
import Reservoir
import Testing
@testable import ReservoirLMDB

/// A deliberately small map fills again and again; every write must land exactly once.
@Suite struct MapGrowthTests {
    static func note(_ i: Int) -> Note {
        Note(id: i, title: "note \(i) " + String(repeating: "x", count: 100 + i % 50), priority: i % 7, score: Double(i) / 4, tag: i % 3 == 0 ? nil : "t\(i % 5)")
    }

    @Test func manySmallCommitsAndOneLargeTransactionInASmallMap() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env?mapsize=64KiB&durability=none")
        defer { store.close() }
        let backend = try #require(store.backend as? LMDBBackend)
        let initial = backend.mapSize
        #expect(initial == 64 * 1024)
        var published: [ChangeSet] = []
        let lock = NSLock()
        let subscription = store.changes.sink { changeSet in
            lock.lock()
            published.append(changeSet)
            lock.unlock()
        }
        defer { subscription.cancel() }

        // 600 single-record commits; the body of each runs exactly once.
        var bodyRuns = 0
        for i in 0..<600 {
            try store.write { tx in
                bodyRuns += 1
                try tx.insert(Self.note(i))
            }
        }
        #expect(bodyRuns == 600)
        let afterSmall = backend.mapSize
        #expect(afterSmall > initial, "the map grew from \(initial) to \(afterSmall)")

        // One transaction far larger than the map: inserts, updates and deletes mixed.
        var largeRuns = 0
        try store.write { tx in
            largeRuns += 1
            for i in 600..<20_600 { try tx.insert(Self.note(i)) }
            for i in stride(from: 0, to: 600, by: 2) { try tx.update(Note(id: i, title: "updated \(i)", priority: 100)) }
            for i in stride(from: 1, to: 600, by: 4) { try tx.delete(Note.self, id: i) }
        }
        #expect(largeRuns == 1)
        #expect(backend.mapSize > afterSmall)

        // Exactly what was written, nothing lost, nothing doubled.
        var expected: [Int: Note] = [:]
        for i in 0..<20_600 { expected[i] = Self.note(i) }
        for i in stride(from: 0, to: 600, by: 2) { expected[i] = Note(id: i, title: "updated \(i)", priority: 100) }
        for i in stride(from: 1, to: 600, by: 4) { expected[i] = nil }
        let all = try store.fetch(Note.self)
        #expect(all.count == expected.count)
        #expect(all == expected.keys.sorted().compactMap { expected[$0] })
        #expect(try store.count(FetchRequest<Note>(where: \.priority == 100)) == 300)
        #expect(try store.fetch(FetchRequest<Note>(where: \.priority == 3)).map(\.id) == expected.values.filter { $0.priority == 3 }.map(\.id).sorted())
        #expect(try store.read { try $0.lastSequence() } == 601)
        lock.lock()
        let sequences = published.map(\.sequence)
        let largeChange = published.last
        lock.unlock()
        #expect(sequences == Array(1...601))
        #expect(largeChange?.changes(to: "notes")?.inserted.count == 20_000)
        #expect(largeChange?.changes(to: "notes")?.updated.count == 300)
        #expect(largeChange?.changes(to: "notes")?.deleted.count == 150)
        // The persisted log holds each change set once.
        let log = try store.backend.read { try $0.changeLog(after: 0, limit: 10_000) }
        #expect(Set(log.map(\.sequence)).count == 601)
        #expect(log.filter { $0.sequence == 601 }.count == 20_450)
    }

    @Test func aMapThatMayNotGrowFurtherIsAFullErrorAndLosesNothing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        let store = try openStore("lmdb:\(path)?mapsize=64KiB&maxmapsize=256KiB&durability=none")
        defer { store.close() }
        var committed = 0
        var failure: ReservoirError?
        while failure == nil && committed < 10_000 {
            do {
                try store.write { tx in
                    for i in 0..<10 { try tx.insert(Self.note(committed * 10 + i)) }
                }
                committed += 1
            } catch let error as ReservoirError {
                failure = error
            }
        }
        let error = try #require(failure)
        #expect(error.code == .full)
        #expect(error.nativeCode == CLMDB_MAP_FULL)
        #expect(error.message.contains(path) || error.message.contains(URL(fileURLWithPath: path).resolvingSymlinksInPath().path), "\(error)")
        #expect(error.message.contains("maxmapsize"), "\(error)")
        // Everything committed before is intact; the failed transaction left nothing.
        #expect(try store.count(FetchRequest<Note>()) == committed * 10)
        #expect(try store.read { try $0.lastSequence() } == UInt64(committed))
        // Reopened with a higher ceiling, the store grows again.
        store.close()
        let bigger = try openStore("lmdb:\(path)?maxmapsize=4MiB&durability=none")
        defer { bigger.close() }
        try bigger.write { tx in try tx.insert(Note(id: -1, title: "fits again")) }
        #expect(try bigger.get(Note.self, id: -1)?.title == "fits again")
        #expect(try bigger.count(FetchRequest<Note>()) == committed * 10 + 1)
    }

    @Test func aFullDiskIsAnErrorNamingThePathAndLosesNothing() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env?durability=none"
        // The helper limits its file size (RLIMIT_FSIZE), as a full disk would, and writes until it fails.
        let helper = try Helper(["fill", configuration, "\(1 << 20)"])
        #expect(await helper.waitForExit() == 0, "helper output: \(helper.output)")
        let output = helper.output
        let committedLine = try #require(output.first { $0.hasPrefix("committed ") })
        let errorLine = try #require(output.first { $0.hasPrefix("error ") })
        let committed = try #require(Int(committedLine.dropFirst("committed ".count)))
        #expect(committed > 0)
        #expect([EIO, EFBIG, ENOSPC].contains { errorLine.hasPrefix("error full \($0) ") }, "\(errorLine)")
        #expect(errorLine.contains(dir.path) || errorLine.contains("/env"), "\(errorLine)")
        #expect(output.contains("readable \(committed)"), "\(output)")
        // Reopened here, with no limit: exactly the committed records.
        let store = try openStore(configuration)
        defer { store.close() }
        #expect(try store.count(FetchRequest<Note>()) == committed)
        try await store.write { tx in try tx.insert(Note(id: -1, title: "room again")) }
    }
}
