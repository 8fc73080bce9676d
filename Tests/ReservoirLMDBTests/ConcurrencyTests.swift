import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// Readers on several threads while a writer keeps filling a tiny map: every resize waits
/// for the readers to step out of their transactions, nobody crashes, nothing is lost.
@Suite struct ConcurrencyTests {
    @Test(.timeLimit(.minutes(2)))
    func readersKeepReadingWhileTheMapGrows() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env?mapsize=64KiB&durability=none"
        let writerStore = try openStore(configuration)
        defer { writerStore.close() }
        let readerStore = try openStore(configuration)
        defer { readerStore.close() }
        let writes = 1500
        let failures = Locked<[String]>([])
        let done = Locked(false)
        // Real threads, not tasks: the loops block, and the cooperative pool has as few
        // threads as cores.
        let totalReads = Locked(0)
        let group = DispatchGroup()
        for reader in 0..<3 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var reads = 0
                defer { totalReads.withLock { $0 += reads } }
                while !done.withLock({ $0 }) {
                    do {
                        let notes = try readerStore.read { snapshot -> [Note] in
                            let all = try snapshot.fetch(FetchRequest<Note>(where: \.priority >= 0, sortBy: [.descending(\.priority)]))
                            // A consistent snapshot: ids are exactly 0..<n.
                            let ids = all.map(\.id).sorted()
                            if ids != Array(0..<ids.count) { throw ReservoirError(.corrupt, "reader \(reader) saw ids \(ids.prefix(10))…") }
                            return all
                        }
                        _ = try readerStore.get(Note.self, id: notes.count / 2)
                        reads += 1
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                        return
                    }
                }
            }
        }
        do {
            defer { done.withLock { $0 = true } }
            for i in 0..<writes {
                try writerStore.write { tx in
                    try tx.insert(Note(id: i, title: String(repeating: "n", count: 200 + i % 100), priority: i % 10))
                }
            }
        }
        #expect(group.wait(timeout: .now() + 30) == .success, "readers did not stop")
        print("reads while the map grew: \(totalReads.withLock { $0 })")
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try readerStore.count(FetchRequest<Note>()) == writes)
        let backend = try #require(writerStore.backend as? LMDBBackend)
        #expect(backend.mapSize > 64 * 1024)
    }

    /// `close()` while another thread's read is open waits for that read to end, then closes
    /// the environment: the last transaction to leave wakes it. Without that wake-up the close
    /// sleeps out its 10 s limit before it looks again: not a speed check, a hang's (the read
    /// ends after 0.3 s; the bound is 5 s).
    @Test(.timeLimit(.minutes(1)))
    func closeWaitsForAnotherThreadsReadThenClosesTheEnvironment() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        try store.write { try $0.insert(Note(id: 1, title: "one")) }
        let dataFile = URL(fileURLWithPath: "\(dir.path)/env/data.mdb").resolvingSymlinksInPath().path
        #expect(openDescriptors(of: dataFile) > 0)
        let reading = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        let readEnded = DispatchSemaphore(value: 0)
        let readFailure = Locked<String?>(nil)
        Thread.detachNewThread {
            do {
                try store.read { _ in
                    reading.signal()
                    finish.wait()
                }
            } catch {
                readFailure.withLock { $0 = "\(error)" }
            }
            readEnded.signal()
        }
        reading.wait()
        // The read ends only once close() has had time to begin waiting for it.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { finish.signal() }
        let started = Date()
        store.close()
        let waited = Date().timeIntervalSince(started)
        #expect(readEnded.wait(timeout: .now() + 10) == .success)
        #expect(readFailure.withLock { $0 } == nil)
        #expect(waited < 5, "close() returned \(waited) s after it began, though the read it waited for ended after 0.3 s")
        #expect(openDescriptors(of: dataFile) == 0, "close() left data.mdb open")
    }

    /// How many of this process's descriptors are open on `path` (resolved), from /proc/self/fd;
    /// -1 where there is no /proc.
    private func openDescriptors(of path: String) -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return -1 }
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)) == path
        }.count
    }
}
