import CLMDB
import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
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
        let subscription = store.changeSets.sink { changeSet in
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

    /// The native insert (`MDB_NOOVERWRITE`) through map growth: each outcome is the one a
    /// read-then-put would give, and replaying never doubles a row or an index entry nor
    /// resurrects a refused one.
    @Test func insertsAndRefusedInsertsReplayExactlyThroughMapGrowth() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env", options: LMDBOptions(try StoreConfiguration("lmdb:\(dir.path)/env?mapsize=64KiB&durability=none")))
        defer { backend.close() }
        let entity = Note.schema.entity
        func row(_ i: Int, _ title: String, priority: Int? = nil) throws -> Row {
            try RowEncoder().encode(Note(id: i, title: title + String(repeating: "x", count: 100), priority: priority ?? i % 7))
        }
        for count in [0, 1, 10, 3_000] {
            let base = count * 10_000
            var outcomes: [Bool] = []
            var bodyRuns = 0
            let initial = backend.mapSize
            try backend.write { tx in
                bodyRuns += 1
                for i in 0..<count {
                    outcomes.append(try tx.insert(entity, id: .integer(Int64(base + i)), row: try row(base + i, "first")))
                    // Refused: the id was inserted just before, and an early one again.
                    outcomes.append(try tx.insert(entity, id: .integer(Int64(base + i)), row: try row(base + i, "second", priority: 100)))
                    outcomes.append(try tx.insert(entity, id: .integer(Int64(base)), row: try row(base, "third", priority: 101)))
                }
            }
            #expect(bodyRuns == 1, "count \(count)")
            #expect(outcomes == (0..<count).flatMap { _ in [true, false, false] }, "count \(count)")
            if count == 3_000 { #expect(backend.mapSize > initial, "the map grew") }
            let stored = try backend.read { tx in
                try tx.fetch(Query(entity: entity, predicate: .and([.compare(column: "id", .greaterOrEqual, .integer(Int64(base))), .compare(column: "id", .less, .integer(Int64(base + 10_000)))])))
            }
            #expect(stored.count == count, "count \(count)")
            #expect(stored.allSatisfy { ($0.value("title").description).contains("first") }, "count \(count)")
            // One index entry per stored row: the index answers exactly the rows.
            for priority in 0..<7 {
                let byIndex = try backend.read { tx in
                    try tx.fetch(Query(entity: entity, predicate: .and([.compare(column: "priority", .equal, .integer(Int64(priority))), .compare(column: "id", .greaterOrEqual, .integer(Int64(base))), .compare(column: "id", .less, .integer(Int64(base + 10_000)))])))
                }
                #expect(byIndex.map(\.description) == stored.filter { $0.value("priority") == .integer(Int64(priority)) }.map(\.description), "count \(count), priority \(priority)")
            }
            let indexEntries = try backend.read { tx -> Int in
                let t = try #require(tx as? LMDBTransaction)
                // No index database before the first row.
                guard let index = try t.indexDatabase(entity.name, "priority") else { return 0 }
                return try t.entryCount(index)
            }
            let rowCount = try backend.read { try $0.count(Query(entity: entity)) }
            #expect(indexEntries == rowCount, "count \(count)")
        }
    }

    /// Puts alternating between entities, with descriptions passed as the same value, as
    /// equal copies and as a changed description, replayed through map growth: every row
    /// lands in its own entity with its own indexes.
    @Test func interleavedEntitiesReplayIntoTheRightDatabases() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env", options: LMDBOptions(try StoreConfiguration("lmdb:\(dir.path)/env?mapsize=64KiB&durability=none")))
        defer { backend.close() }
        let a = EntityDescription(name: "a", fields: ["id", "n", "text"], indexes: ["n"])
        func row(_ i: Int, _ n: Int) -> Row {
            Row(columns: ["id", "n", "text"], values: [.integer(Int64(i)), .integer(Int64(n)), .text(String(repeating: "y", count: 80))])
        }
        let initial = backend.mapSize
        try backend.write { tx in
            for i in 0..<2_000 {
                try tx.put(a, id: .integer(Int64(i)), row: row(i, i % 5))
                // A fresh but equal description every time.
                let b = EntityDescription(name: "b", fields: ["id", "n", "text"], indexes: i < 1_000 ? [] : ["n"])
                try tx.put(b, id: .integer(Int64(i)), row: row(i, i % 3))
            }
        }
        #expect(backend.mapSize > initial, "the map grew")
        try backend.read { tx in
            for n in 0..<5 {
                let ids = try tx.fetch(Query(entity: a, predicate: .compare(column: "n", .equal, .integer(Int64(n))))).map(\.description)
                #expect(ids.count == 400, "a, n \(n)")
            }
            let b = EntityDescription(name: "b", fields: ["id", "n", "text"], indexes: ["n"])
            #expect(try tx.entities().map(\.name) == ["a", "b"])
            #expect(try tx.entities().last?.indexes == ["n"], "b's description as last written")
            for n in 0..<3 {
                // Answered from b's index, built when the index was added mid-transaction.
                let rows = try tx.fetch(Query(entity: b, predicate: .compare(column: "n", .equal, .integer(Int64(n)))))
                #expect(rows.count == (0..<2_000).filter { $0 % 3 == n }.count, "b, n \(n)")
            }
            let t = try #require(tx as? LMDBTransaction)
            let aIndex = try #require(try t.indexDatabase("a", "n"))
            let bIndex = try #require(try t.indexDatabase("b", "n"))
            #expect(try t.entryCount(aIndex) == 2_000)
            #expect(try t.entryCount(bIndex) == 2_000)
        }
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
        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["fill", configuration, "\(1 << 20)"])
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
