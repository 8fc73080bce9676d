import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// A database deleted or replaced under a live store once left its subscriptions silent
/// while other processes wrote to a new file at the same path. The store now stops: live
/// subscriptions complete with `.gone` naming the file, and writes fail.
@Suite struct VanishedStoreTests {
    final class Ends: @unchecked Sendable {
        private let lock = NSLock()
        private var live: Subscribers.Completion<any Error>?
        private var raw: Subscribers.Completion<Never>?
        var liveEnd: Subscribers.Completion<any Error>? { lock.lock(); defer { lock.unlock() }; return live }
        var rawEnd: Subscribers.Completion<Never>? { lock.lock(); defer { lock.unlock() }; return raw }
        func setLive(_ end: Subscribers.Completion<any Error>) { lock.lock(); live = end; lock.unlock() }
        func setRaw(_ end: Subscribers.Completion<Never>) { lock.lock(); raw = end; lock.unlock() }
    }

    @Test(arguments: ["deleted", "replaced"])
    func aVanishedDatabaseStopsTheStore(how: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.databasePath
        let store = try openStore(path)
        defer { store.close() }
        try await store.write { try $0.insert(Todo(id: 1, title: "one", done: false, priority: 1)) }
        let ends = Ends()
        let live = store.differencesPublisher(for: FetchRequest<Todo>()).sink(receiveCompletion: { ends.setLive($0) }, receiveValue: { _ in })
        let raw = store.changeSets.sink(receiveCompletion: { ends.setRaw($0) }, receiveValue: { _ in })
        defer { live.cancel(); raw.cancel() }

        if how == "deleted" {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            // Another process carries on at the same path, in a new file.
            let other = try openStore(path)
            try await other.write { try $0.insert(Todo(id: 2, title: "elsewhere", done: false, priority: 1)) }
            other.close()
        } else {
            let elsewhere = directory.url.appendingPathComponent("restored.sqlite").path
            let other = try openStore(elsewhere)
            try await other.write { try $0.insert(Todo(id: 9, title: "restored", done: false, priority: 1)) }
            other.close()
            #expect(rename(elsewhere, path) == 0)
        }

        #expect(await eventually { ends.liveEnd != nil && ends.rawEnd != nil }, "the subscriptions did not end")
        guard case let .failure(error as ReservoirError) = ends.liveEnd else {
            Issue.record("the live subscription ended with \(String(describing: ends.liveEnd)), not a ReservoirError")
            return
        }
        // A deleted file is usually recreated by the other store before the next probe, and
        // then reads as replaced.
        #expect(error.code == .gone && error.message.contains(path) && (error.message.contains("replaced") || error.message.contains(how)), "\(error)")
        if case .finished = ends.rawEnd {} else { Issue.record("store.changeSets ended with \(String(describing: ends.rawEnd))") }
        let write = try #require(throws: ReservoirError.self) {
            try store.write { try $0.insert(Todo(id: 3, title: "lost?", done: false, priority: 1)) }
        }
        #expect(write.code == .gone, "\(write)")
        // A subscription made after the store stopped ends at once.
        let late = Ends()
        let lateLive = store.differencesPublisher(for: FetchRequest<Todo>()).sink(receiveCompletion: { late.setLive($0) }, receiveValue: { _ in })
        defer { lateLive.cancel() }
        if case .failure = late.liveEnd {} else { Issue.record("a late subscription ended with \(String(describing: late.liveEnd))") }
    }
}
