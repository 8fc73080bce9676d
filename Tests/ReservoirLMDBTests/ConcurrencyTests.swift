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
}
