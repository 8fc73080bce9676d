import Foundation
import Reservoir
import ReservoirConformance
import Testing

/// The file signal behind event-driven delivery: writes to a watched file wake its watchers,
/// other files in the directory do not, a file deleted and created anew stays watched, and
/// cancelling stops the wake-ups.
#if os(Linux)
@Suite struct FileChangeWatchTests {
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        private var latest: UInt64 = 0
        var value: Int { lock.withLock { count } }
        /// When the last wake-up came, in uptime nanoseconds (0: none yet).
        var lastWake: UInt64 { lock.withLock { latest } }
        func increment() {
            let now = DispatchTime.now().uptimeNanoseconds
            lock.withLock {
                count += 1
                latest = now
            }
        }
    }

    /// A watch on `files` counting its wake-ups in `counter`.
    func watch(_ files: [String], _ counter: Counter) throws -> FileChangeWatch {
        guard let watch = FileChangeWatch.watching(files, wake: { counter.increment() }) else {
            throw ReservoirError(.backend, "no file watch could be set up for \(files)")
        }
        return watch
    }

    func append(_ text: String, to path: String) throws {
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
    }

    @Test func writesToAWatchedFileWakeAndOthersDoNot() async throws {
        let temporary = try TemporaryDirectory("reservoir-watch")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let watched = directory + "/data", other = directory + "/unrelated"
        try append("", to: watched)
        let wakes = Counter()
        let watch = try watch([watched], wakes)
        defer { watch.cancel() }

        try append("x", to: other)
        try await Task.sleep(for: .milliseconds(100))
        #expect(wakes.value == 0, "a write to another file in the directory woke the watcher")

        try append("x", to: watched)
        #expect(await eventually(timeout: .seconds(5)) { wakes.value > 0 }, "a write to the watched file never woke the watcher")
    }

    @Test func aFileDeletedAndCreatedAnewStaysWatched() async throws {
        let temporary = try TemporaryDirectory("reservoir-watch")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let watched = directory + "/data-wal"
        let wakes = Counter()
        // Watched before it exists, as a WAL file may be.
        let watch = try watch([watched], wakes)
        defer { watch.cancel() }
        try append("first", to: watched)
        #expect(await eventually(timeout: .seconds(5)) { wakes.value > 0 })
        try FileManager.default.removeItem(atPath: watched)
        try await Task.sleep(for: .milliseconds(50))
        let before = wakes.value
        try append("second", to: watched)
        #expect(await eventually(timeout: .seconds(5)) { wakes.value > before }, "the file created anew was not watched")
    }

    /// A file's own watch removes itself at its first event and is set again once that event
    /// is read: every later write wakes too, each round after the last was delivered, and a
    /// run of writes faster than the reading thread leaves the watch set.
    @Test func everyWriteAfterAWakeUpWakesAgain() async throws {
        let temporary = try TemporaryDirectory("reservoir-watch")
        defer { temporary.cleanUp() }
        let watched = temporary.path + "/data"
        try append("", to: watched)
        let wakes = Counter()
        let watch = try watch([watched], wakes)
        defer { watch.cancel() }
        for round in 1...5 {
            let before = wakes.value
            try append("round \(round)", to: watched)
            #expect(await eventually(timeout: .seconds(5)) { wakes.value > before }, "round \(round)'s write did not wake the watcher")
            try await Task.sleep(for: .milliseconds(5))
        }
        // Bursts: a burst's last write may land while the watch is down, and a wake-up still
        // follows it.
        for burst in 1...20 {
            let handle = try #require(FileHandle(forWritingAtPath: watched))
            for _ in 0..<200 { try handle.write(contentsOf: Data("x".utf8)) }
            // Taken before the last write (the close): a wake-up for it may come before this
            // thread could read the clock after it, on a loaded machine.
            let lastWrite = DispatchTime.now().uptimeNanoseconds
            try handle.close()
            #expect(await eventually(timeout: .seconds(5)) { wakes.lastWake > lastWrite }, "no wake-up followed burst \(burst)'s last write")
        }
        try await Task.sleep(for: .milliseconds(50))
        let afterBurst = wakes.value
        try append("after the burst", to: watched)
        #expect(await eventually(timeout: .seconds(5)) { wakes.value > afterBurst }, "the write after a burst did not wake the watcher")
    }

    /// A file renamed over the watched name (another file, as a restored copy is) wakes the
    /// watcher, and its own writes are watched from then on; the file it replaced is not.
    @Test func aFileRenamedOverTheNameIsWatchedInstead() async throws {
        let temporary = try TemporaryDirectory("reservoir-watch")
        defer { temporary.cleanUp() }
        let watched = temporary.path + "/data", incoming = temporary.path + "/incoming"
        try append("old", to: watched)
        let old = try #require(FileHandle(forWritingAtPath: watched))
        defer { try? old.close() }
        let wakes = Counter()
        let watch = try watch([watched], wakes)
        defer { watch.cancel() }
        try append("new", to: incoming)
        try await Task.sleep(for: .milliseconds(50))
        #expect(wakes.value == 0, "a write to another file in the directory woke the watcher")
        #expect(rename(incoming, watched) == 0)
        #expect(await eventually(timeout: .seconds(5)) { wakes.value > 0 }, "the rename over the watched name did not wake the watcher")
        try await Task.sleep(for: .milliseconds(50))
        let afterRename = wakes.value
        // The replaced file, still open, is no longer the watched name's.
        try old.seekToEnd()
        try old.write(contentsOf: Data("x".utf8))
        try await Task.sleep(for: .milliseconds(100))
        #expect(wakes.value == afterRename, "a write to the replaced file woke the watcher")
        try append("x", to: watched)
        #expect(await eventually(timeout: .seconds(5)) { wakes.value > afterRename }, "a write to the file renamed in did not wake the watcher")
    }

    @Test func cancellingStopsTheWakeUps() async throws {
        let temporary = try TemporaryDirectory("reservoir-watch")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let watched = directory + "/data"
        let kept = Counter(), cancelled = Counter()
        // Two watchers of one directory share its inotify watch: cancelling one leaves the other.
        let keep = try watch([watched], kept)
        defer { keep.cancel() }
        let stop = try watch([watched], cancelled)
        stop.cancel()
        try await Task.sleep(for: .milliseconds(50))
        let before = cancelled.value
        try append("x", to: watched)
        #expect(await eventually(timeout: .seconds(5)) { kept.value > 0 }, "the remaining watcher lost its wake-ups")
        try await Task.sleep(for: .milliseconds(100))
        #expect(cancelled.value == before, "a cancelled watch still woke")
    }

    /// Stores side by side in one directory (replicas' files): each wake-up goes to the watchers
    /// of the file written, and a watcher cancelled takes only its own file's routes with it.
    @Test func watchersOfNeighbouringFilesWakeOnlyForTheirOwn() async throws {
        let temporary = try TemporaryDirectory("reservoir-watch")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let first = Counter(), second = Counter()
        let firstWatch = try watch([directory + "/a.sqlite", directory + "/a.sqlite-wal"], first)
        let secondWatch = try watch([directory + "/b.sqlite", directory + "/b.sqlite-wal"], second)
        defer { secondWatch.cancel() }
        try append("x", to: directory + "/a.sqlite-wal")
        #expect(await eventually(timeout: .seconds(5)) { first.value > 0 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(second.value == 0, "a write to a neighbour's file woke this watcher")
        firstWatch.cancel()
        try await Task.sleep(for: .milliseconds(50))
        let cancelled = first.value
        try append("x", to: directory + "/a.sqlite")
        try append("x", to: directory + "/b.sqlite-wal")
        #expect(await eventually(timeout: .seconds(5)) { second.value > 0 }, "the remaining watcher lost its wake-ups")
        try await Task.sleep(for: .milliseconds(100))
        #expect(first.value == cancelled, "a cancelled watch still woke")
    }

    /// More watches than the kernel allows a user inotify instances (128 by default): they share one.
    @Test func manyWatchesShareOneInstance() async throws {
        let temporary = try TemporaryDirectory("reservoir-watch")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let counters = (0..<300).map { _ in Counter() }
        let watches = try counters.enumerated().map { index, counter in try watch([directory + "/file\(index % 3)"], counter) }
        defer { watches.forEach { $0.cancel() } }
        try append("x", to: directory + "/file1")
        #expect(await eventually(timeout: .seconds(5)) { counters.enumerated().allSatisfy { $0.offset % 3 != 1 || $0.element.value > 0 } })
        #expect(counters.enumerated().allSatisfy { $0.offset % 3 == 1 || $0.element.value == 0 }, "watchers of other files woke")
    }
}
#endif
