import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// lock.mdb (or the writer lock) deleted under a live store let another process make a
/// new one, after which writers were no longer serialised and a commit reported as made
/// could be lost. The store now stops: writes fail and live subscriptions complete with
/// `.gone` naming the file.
@Suite struct VanishedStoreTests {
    final class End: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Subscribers.Completion<any Error>?
        var value: Subscribers.Completion<any Error>? { lock.lock(); defer { lock.unlock() }; return stored }
        func set(_ end: Subscribers.Completion<any Error>) { lock.lock(); stored = end; lock.unlock() }
    }

    @Test(arguments: ["lock.mdb", "reservoir-writer.lock", "data.mdb"])
    func aDeletedFileStopsTheStore(file: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        try await store.write { try $0.insert(Note(id: 1, title: "one")) }
        let end = End()
        let live = store.differencesPublisher(for: FetchRequest<Note>()).sink(receiveCompletion: { end.set($0) }, receiveValue: { _ in })
        defer { live.cancel() }
        let path = "\(dir.path)/env/\(file)"
        try FileManager.default.removeItem(atPath: path)

        _ = await eventually(timeout: .seconds(5)) { end.value != nil }
        guard case let .failure(error as ReservoirError) = end.value else {
            Issue.record("the live subscription ended with \(String(describing: end.value)), not a ReservoirError")
            return
        }
        #expect(error.code == .gone && error.message.contains(path) && error.message.contains("deleted"), "\(error)")
        let write = try #require(throws: ReservoirError.self) { try store.write { try $0.insert(Note(id: 2, title: "lost?")) } }
        #expect(write.code == .gone, "\(write)")
    }

    /// Writes check the files by the directory's times once those are old enough
    /// (``DirectoryFiles``): a file replaced after that must still stop the store.
    @Test(arguments: ["lock.mdb", "reservoir-writer.lock", "data.mdb"])
    func aFileReplacedAfterTheDirectorySettledStopsTheStore(file: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        try await store.write { try $0.insert(Note(id: 1, title: "one")) }
        try await Task.sleep(for: .seconds(DirectoryFiles.settledSeconds + 1))
        // The first write after the pause remembers the directory's times, the second trusts them.
        try await store.write { try $0.insert(Note(id: 2, title: "two")) }
        try await store.write { try $0.insert(Note(id: 3, title: "three")) }
        let path = "\(dir.path)/env/\(file)"
        let replacement = "\(dir.path)/env/replacement"
        #expect(FileManager.default.createFile(atPath: replacement, contents: Data()))
        #expect(rename(replacement, path) == 0)

        let write = try #require(throws: ReservoirError.self) { try store.write { try $0.insert(Note(id: 4, title: "lost?")) } }
        #expect(write.code == .gone && write.message.contains(path), "\(write)")
    }
}
