import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// Several processes on one environment: commits reach the other process's change hub
/// through the change log, and a process that dies holding LMDB's locks harms nothing.
@Suite("LMDB: several processes", .serialized) struct MultiProcessTests {
    /// #37 item 1: LMDB publishes nothing for a write that dirtied no page, so its id goes to
    /// the next real commit, whichever process makes it. The environment cached the empty
    /// write's sequence under that id, and this process then read the other process's commit
    /// as the old sequence: `lastSequence()` lagged, live fetches missed the commit until the
    /// next one, and a write here would have reused the sequence.
    @Test(.timeLimit(.minutes(5)))
    func anEmptyWriteThenAnotherProcessesCommitIsSeen() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        let store = try openStore(configuration)
        defer { store.close() }
        try await store.write { tx in try tx.insert(Note(id: 1, title: "first", priority: 5)) }
        let live = Locked<[[Int]]>([])
        let subscription = store.objectsPublisher(for: FetchRequest<Note>(sortBy: [.ascending(\.id)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { notes in live.withLock { $0.append(notes.map(\.id)) } })
        defer { subscription.cancel() }
        try await store.write { _ in }
        try await store.write { tx in try tx.update(Note(id: 1, title: "first", priority: 5)) }

        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["write", configuration, "2", "1", "0"])
        #expect(await helper.waitForExit() == 0, "helper output: \(helper.output)")
        #expect(try await store.read { try $0.lastSequence() } == 2, "the other process's commit is sequence 2")
        #expect(try store.fetch(Note.self).map(\.id) == [1, 2])
        let arrived = await eventually(timeout: .seconds(5)) { live.withLock { $0.last } == [1, 2] }
        #expect(arrived, "the live fetch got the other process's commit: \(live.withLock { $0 })")
        try await store.write { tx in try tx.insert(Note(id: 3, title: "mine", priority: 1)) }
        #expect(try await store.read { try $0.lastSequence() } == 3, "this process's next commit takes the next sequence")
        #expect(try store.backend.read { try $0.changeLog(after: 0, limit: 10).map(\.sequence) } == [1, 2, 3])
    }

    @Test(.timeLimit(.minutes(5)))
    func commitInAnotherProcessReachesChangesQuickly() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        let store = try openStore(configuration)
        defer { store.close() }
        let received = Locked<[(ChangeSet, Double)]>([])
        let subscription = store.changeSets.sink { changeSet in
            let now = Date().timeIntervalSince1970
            received.withLock { $0.append((changeSet, now)) }
        }
        defer { subscription.cancel() }
        // A live fetch: the latest results, as the other process commits.
        let live = Locked<[[Int]]>([])
        let liveSubscription = store.objectsPublisher(for: FetchRequest<Note>(where: \.priority >= 3, sortBy: [.descending(\.priority)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { notes in live.withLock { $0.append(notes.map(\.id)) } })
        defer { liveSubscription.cancel() }

        let count = 8
        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["write", configuration, "1", "\(count)", "150"])
        #expect(await helper.waitForExit() == 0)
        let committed = helper.output.compactMap { line -> (Int, Double)? in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "committed", let id = Int(parts[1]), let time = Double(parts[2]) else { return nil }
            return (id, time)
        }
        #expect(committed.count == count, "helper output: \(helper.output)")
        _ = await eventually(timeout: .seconds(5)) { received.withLock { $0.count } >= count }
        let arrivals = received.withLock { $0 }
        #expect(arrivals.count == count, "change sets received: \(arrivals.map(\.0))")
        var latencies: [Double] = []
        for (changeSet, arrival) in arrivals {
            #expect(changeSet.isExternal)
            guard let inserted = changeSet.changes(to: "notes")?.inserted.first,
                  case let .integer(id) = inserted.id,
                  let sent = committed.first(where: { $0.0 == Int(id) })
            else {
                Issue.record("unexpected change set \(changeSet)")
                continue
            }
            #expect(inserted.row.value("title") == .text("from another process"))
            latencies.append(arrival - sent.1)
        }
        #expect(arrivals.map(\.0.sequence) == Array(1...UInt64(count)), "sequences in order, each once")
        let sorted = latencies.sorted()
        let median = sorted.isEmpty ? .infinity : sorted[sorted.count / 2]
        print("cross-process latency ms: \(latencies.map { Int(($0 * 1000).rounded()) }), median \(median.isFinite ? "\(Int(median * 1000))" : "none")")
        #expect(median < 0.1, "median latency \(median) s")
        #expect((sorted.last ?? .infinity) < 1.0, "worst latency \(sorted.last ?? .infinity) s")
        // The live fetch ended at exactly what a fresh fetch returns.
        let expectedLive = Array((3...count).reversed())
        _ = await eventually(timeout: .seconds(5)) { live.withLock { $0.last } == expectedLive }
        let liveHistory = live.withLock { $0 }
        #expect(liveHistory.first == [], "first value is the (empty) fetch at attach: \(liveHistory)")
        #expect(liveHistory.last == expectedLive, "live results: \(liveHistory)")
        // The other process's rows are readable here, in a named database it created.
        #expect(try store.count(FetchRequest<Note>()) == count)
        #expect(try store.fetch(FetchRequest<Note>(where: \.priority >= 7)).map(\.id) == [7, 8])
    }

    @Test(.timeLimit(.minutes(5)))
    func aWriterKilledMidTransactionLeavesTheLockUsable() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        let store = try openStore(configuration)
        defer { store.close() }
        try await store.write { tx in try tx.insert(Note(id: 1, title: "before")) }
        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["die-in-write", configuration, "2"])
        #expect(await helper.waitForLine { $0 == "writing" } != nil)
        _ = await helper.waitForExit()
        #expect(helper.terminationReason == .uncaughtSignal)
        // The dead process held LMDB's writer mutex and the writer lock file: both recover.
        try await store.write { tx in try tx.insert(Note(id: 3, title: "after")) }
        #expect(try store.fetch(Note.self).map(\.id) == [1, 3])
        #expect(try await store.read { try $0.lastSequence() } == 2)
    }

    @Test(.timeLimit(.minutes(5)))
    func staleReaderSlotsAreClearedOnOpen() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        do {
            let store = try openStore(configuration)
            try await store.write { tx in try tx.insert(Note(id: 1, title: "x")) }
            store.close()
        }
        // One reader stays alive (so the lock file is not reset on the next open), one dies
        // holding its reader slot.
        let alive = try ChildProcess(built: "ReservoirLMDBTestHelper", ["hold-read", configuration])
        defer { alive.kill9() }
        let dying = try ChildProcess(built: "ReservoirLMDBTestHelper", ["hold-read", configuration])
        #expect(await alive.waitForLine { $0 == "reading" } != nil)
        #expect(await dying.waitForLine { $0 == "reading" } != nil)
        dying.kill9()
        let backend = try LMDBBackend(path: dir.path + "/env")
        defer { backend.close() }
        #expect(backend.environment.staleReadersCleared == 1)
        #expect(try backend.read { try $0.row("notes", id: .integer(1)) } != nil)
    }

    /// Two processes writing at once into a tiny map: each grows it, the other follows
    /// (MDB_MAP_RESIZED), and every write lands once with its own sequence.
    @Test(.timeLimit(.minutes(2)))
    func twoProcessesGrowingTheMapTogether() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env?mapsize=64KiB&durability=none"
        let store = try openStore(configuration)
        defer { store.close() }
        let perProcess = 600
        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["write", configuration, "\(perProcess)", "\(perProcess)", "0"], environment: ["PADDING": "2000"])
        for i in 0..<perProcess {
            try await store.write { tx in
                try tx.insert(Note(id: i, title: String(repeating: "p", count: 2000), priority: i % 10))
            }
        }
        #expect(await helper.waitForExit(within: 60) == 0, "helper output tail: \(helper.output.suffix(3))")
        #expect(helper.output.filter { $0.hasPrefix("committed ") }.count == perProcess)
        #expect(try store.count(FetchRequest<Note>()) == 2 * perProcess)
        #expect(try store.fetch(Note.self).map(\.id) == Array(0..<(2 * perProcess)))
        let log = try store.backend.read { try $0.changeLog(after: 0, limit: 10_000) }
        #expect(log.map(\.sequence) == Array(1...UInt64(2 * perProcess)), "one change set per commit, numbered without gaps or repeats")
        let backend = try #require(store.backend as? LMDBBackend)
        print("map after two processes grew it: \(backend.mapSize) bytes; this process grew it \(backend.environment.resizes.grown) times and followed the other \(backend.environment.resizes.followed) times")
    }

    /// A process killed (SIGKILL) while committing loses no commit that returned, in the
    /// default durability and with durability=none: the pages are written before commit returns.
    @Test(.timeLimit(.minutes(1)), arguments: ["", "?durability=none"])
    func aKilledProcessLosesNoCommittedTransaction(options: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env" + options
        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["write", configuration, "0", "100000", "0"])
        _ = await helper.waitForLine { $0.hasPrefix("committed 200 ") }
        helper.kill9()
        let reported = Set(helper.output.compactMap { line -> Int? in
            let parts = line.split(separator: " ")
            return parts.count == 3 && parts[0] == "committed" ? Int(parts[1]) : nil
        })
        #expect(reported.count >= 200)
        let store = try openStore(configuration)
        defer { store.close() }
        let stored = Set(try store.fetch(Note.self).map(\.id))
        #expect(reported.isSubset(of: stored), "committed but missing: \(reported.subtracting(stored).sorted().prefix(10))")
        #expect(try await store.read { try $0.lastSequence() } == UInt64(stored.count))
    }

    /// Column layouts added by two processes in turn get distinct numbers, are read by the
    /// other process from `meta`, and a column list one process stored is reused, not
    /// stored again, by the next.
    @Test(.timeLimit(.minutes(5)))
    func layoutsAddedByTwoProcessesStayDistinctAndShared() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        let store = try openStore(configuration)
        defer { store.close() }
        try await store.write { tx in try tx.insert(NoteV1(id: "a", title: "first")) }
        let first = try ChildProcess(built: "ReservoirLMDBTestHelper", ["write", configuration, "1", "2", "0"])
        #expect(await first.waitForExit() == 0)
        // This process never wrote a Note: it reads their layout from meta, and its own new
        // layout goes after the other process's.
        try await store.write { tx in try tx.insert(NoteV2(id: "c", title: "third", rating: 3)) }
        let second = try ChildProcess(built: "ReservoirLMDBTestHelper", ["write", configuration, "3", "2", "0"])
        #expect(await second.waitForExit() == 0)
        #expect(try store.fetch(Note.self).map(\.title) == Array(repeating: "from another process", count: 4))
        #expect(try store.fetch(FetchRequest<NoteV2>(sortBy: [.ascending(\.title)]))
            == [NoteV2(id: "a", title: "first", rating: nil), NoteV2(id: "c", title: "third", rating: 3)])
        let backend = try #require(store.backend as? LMDBBackend)
        let numbers = try backend.read { tx in
            let t = try #require(tx as? LMDBTransaction)
            return try [("evolving", Value.text("a")), ("notes", .integer(1)), ("evolving", .text("c")), ("notes", .integer(3))].map { entity, id in
                let rows = try #require(try t.database(StoreFormat.rowsDatabase(entity)))
                let bytes = try #require(try t.get(rows, KeyEncoding.encode(id)))
                return try #require(RowCodec.header(bytes)).layout
            }
        }
        #expect(numbers == [0, 1, 2, 1])
    }

    /// A write uses the databases the last write of this process used, checking nothing, only
    /// when it begins on that write's commit; after another process's commit it checks each by
    /// name, so one that process deleted (as a migration renaming an entity does) is refused
    /// rather than written through a handle LMDB has freed.
    @Test(.timeLimit(.minutes(5)), arguments: ["rows/notes", "index/notes/priority", "log"])
    func aDatabaseAnotherProcessDeletedIsNotWrittenThrough(name: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = "\(dir.path)/env"
        let store = try openStore("lmdb:" + path)
        defer { store.close() }
        // The second write begins on the first's commit, so it uses the first's databases as they are.
        for id in 1...2 {
            try await store.write { tx in try tx.insert(Note(id: id, title: "kept", priority: id)) }
        }
        let helper = try ChildProcess(built: "ReservoirLMDBTestHelper", ["drop", path, name])
        #expect(await helper.waitForExit() == 0, "helper output: \(helper.output)")
        let error = await #expect(throws: ReservoirError.self) {
            try await store.write { tx in try tx.insert(Note(id: 3, title: "refused", priority: 3)) }
        }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains("the named database \"\(name)\" was deleted by another process") == true,
                "\(String(describing: error))")
        // Nothing went through the deleted database's handle: every page still checks.
        let backend = try #require(store.backend as? LMDBBackend)
        #expect(try backend.verifyFiles().problems == [])
    }
}
