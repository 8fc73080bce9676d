import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import Testing

private struct Counter: Storable {
    var id: Int
    var value: Int
    static let schema = Schema<Counter>("counters", fields: [.field(\.value)])
}

/// One memory backend seen by two stores, as two processes see one file, whose next reads
/// can be made to fail (a server failing under a write).
private final class SharedMemory: StorageBackend {
    let inner: MemoryBackend
    let failingReads = Locked(0)

    init(_ inner: MemoryBackend) { self.inner = inner }

    var capabilities: BackendCapabilities { [.multiProcess] }
    var location: String { "memory" }

    func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R {
        let fails = failingReads.withLock { count in
            defer { count = max(0, count - 1) }
            return count > 0
        }
        if fails { throw ReservoirError(.backend, "memory: a read failing as a lost server's does") }
        return try inner.read(body)
    }

    func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R { try inner.write(body) }
    func commitToken() throws -> UInt64 { try inner.commitToken() }
    func close() {}
}

/// A write that finds another process's commits numbered before its own announces those
/// first, from the change log. Found by the PostgreSQL fault loop: when that read failed, the
/// write announced its own change set anyway and the other commits were never announced.
@Suite("Store: other processes' commits before an own one")
struct ExternalGapTests {
    @Test("a write that cannot read the commits before its own announces them as unknown, and observers re-read")
    func unreadableCommitsBeforeAWriteAreReRead() throws {
        let memory = MemoryBackend()
        defer { memory.close() }
        let mine = SharedMemory(memory)
        // The probes stay away (an hour apart, no commit signal): the write finds the gap.
        let store = try Store(backend: mine, pollInterval: .seconds(3600), usesCommitSignal: false)
        let elsewhere = try Store(backend: SharedMemory(memory), pollInterval: .seconds(3600), usesCommitSignal: false)
        defer {
            store.close()
            elsewhere.close()
        }
        let live = Locked<[Counter]>([])
        let changeSets = Locked<[String]>([])
        let subscription = store.differencesPublisher(for: FetchRequest<Counter>(sortBy: [.ascending(\.id)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { difference in live.withLock { $0 = $0.applying(difference) ?? $0 } })
        let announced = store.changeSets.sink { changeSet in
            changeSets.withLock { $0.append("\(changeSet.sequence)\(changeSet.isComplete ? "" : " incomplete")") }
        }
        defer {
            subscription.cancel()
            announced.cancel()
        }

        try store.write { try $0.insert(Counter(id: 1, value: 1)) }
        try elsewhere.write { try $0.insert(Counter(id: 2, value: 2)) }
        mine.failingReads.withLock { $0 = 1 }
        try store.write { try $0.insert(Counter(id: 3, value: 3)) }

        // Change sets are delivered before the write returns; the stretch the write could
        // not read is re-read by the subscription.
        #expect(changeSets.withLock { $0 } == ["1", "2 incomplete", "3"])
        #expect(eventuallyBlocking(timeout: .seconds(60)) { live.withLock { $0 }.map(\.id) == [1, 2, 3] }, "\(live.withLock { $0 })")
        #expect(try store.fetch(Counter.self).map(\.id) == [1, 2, 3])
    }
}
