import Foundation
import Reservoir
import ReservoirConformance
@testable import ReservoirSQLite
import Testing

/// WAL checkpoints run on a background connection, and the WAL stays bounded under a
/// steady stream of commits (see `Checkpointer`).
@Suite struct CheckpointTests {
    /// The size of a file in bytes, 0 when it does not exist.
    func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    /// Synchronous: run as an async test, each `await store.write` resumed on the cooperative
    /// pool, which the suite's long synchronous tests keep busy on a 2-core machine (600
    /// writes took 110 to 170 s there, and once the checkpoint did not follow within 10 s).
    @Test func checkpointsRunInTheBackgroundWithoutLosingCommits() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.databasePath
        let store = try openStore(path)
        let before = size(path)
        // 600 commits of a row of about a kilobyte: three or four WAL frames each (the row's
        // page, the index's, the change log's, the header when the file grows), past the
        // background threshold (1,000 frames) and short of the one at which the writer
        // checkpoints itself (4,000). New pages reach the database file only through a
        // checkpoint, so the file growing proves a background one ran.
        let padding = String(repeating: "x", count: 1000)
        for id in 1...600 {
            try store.write { try $0.insert(Todo(id: id, title: "todo \(id) \(padding)", done: false, priority: id % 7)) }
        }
        let frame = 4096 + 24
        let frames = size(path + "-wal") / frame
        #expect(frames > 1000 && frames < 4000, "the WAL holds \(frames) frames; the test needs between 1,000 and 4,000")
        // The checkpoint's queue shares the process's dispatch threads with the other tests.
        let grew = eventuallyBlocking(timeout: .seconds(60)) { size(path) > before + 300_000 }
        #expect(grew, "the database file stayed at \(size(path)) bytes (\(before) at open): no checkpoint copied the new pages")
        #expect(try store.count(FetchRequest<Todo>()) == 600)
        store.close()

        let reopened = try openStore(path)
        defer { reopened.close() }
        let todos = try reopened.fetch(FetchRequest<Todo>())
        #expect(todos.map(\.id) == Array(1...600))
        #expect(todos.allSatisfy { $0.title == "todo \($0.id) \(padding)" })
    }

    @Test func theWALStaysBoundedUnderSteadyCommits() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.databasePath
        let store = try openStore(path)
        defer { store.close() }
        // 5,000 back-to-back commits write about 10,000 frames. Background checkpoints alone
        // cannot restart the WAL while commits keep coming; the writer's own checkpoint past
        // 4,000 frames lets the next write restart it. While a background checkpoint still
        // runs the writer's is refused and retried; past 6,000 frames the writer waits for it.
        // Under load (one core kept busy) the WAL reached 4,060 to 5,070 frames.
        for id in 1...5000 {
            try store.write { try $0.insert(Todo(id: id, title: "t\(id)", done: id % 2 == 0, priority: id % 5)) }
        }
        let frame = 4096 + 24
        let wal = size(path + "-wal")
        #expect(wal > 0)
        #expect(wal <= 6050 * frame, "the WAL grew to \(wal) bytes (\(wal / frame) frames)")
        #expect(try store.count(FetchRequest<Todo>()) == 5000)
    }

    /// A WAL that a checkpoint copied whole but that no writer could restart (commits kept
    /// coming) asks for the next checkpoint only once another 1,000 frames arrived, not at
    /// every commit past the threshold (each one two syncs for a few frames).
    @Test func aCopiedWALAsksForTheNextCheckpointOnlyAfterAThousandNewFrames() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.databasePath
        let store = try openStore(path)
        defer { store.close() }
        try store.write { try $0.insert(Todo(id: 0, title: "made", done: false, priority: 0)) }
        let writer = try Connection(path: path, create: false, busyTimeout: 1000)
        try writer.execute("CREATE TABLE filler (x)")
        for _ in 0..<1_100 { try writer.execute("INSERT INTO filler VALUES (randomblob(100))") }
        // A reader of the newest snapshot lets a checkpoint copy every frame but keeps any
        // writer from restarting the WAL, as back-to-back commits do.
        let reader = try Connection(path: path, create: false, busyTimeout: 1000)
        try reader.execute("BEGIN")
        _ = try reader.scalar("SELECT count(*) FROM filler")
        let checkpointer = Checkpointer(path: path, synchronous: "NORMAL")
        defer { checkpointer.close() }
        func frames() -> Int32 { Int32((size(path + "-wal") - 32) / (4096 + 24)) }
        #expect(frames() >= 1_000)
        checkpointer.request(frames: frames())
        checkpointer.waitForBackground()
        #expect(checkpointer.checkpointsRun == 1)
        for step in 1...20 {
            try writer.execute("INSERT INTO filler VALUES (\(step))")
            checkpointer.request(frames: frames())
            checkpointer.waitForBackground()
        }
        #expect(checkpointer.checkpointsRun == 1, "a checkpoint for every commit past the threshold")
        for _ in 0..<1_000 { try writer.execute("INSERT INTO filler VALUES (randomblob(100))") }
        checkpointer.request(frames: frames())
        checkpointer.waitForBackground()
        #expect(checkpointer.checkpointsRun == 2, "1,000 new frames ask for the next one")
        try reader.execute("COMMIT")
    }
}
