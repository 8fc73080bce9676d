import CSQLite
import Foundation
import Reservoir

/// Runs the WAL checkpoints of one backend on a connection and queue of its own, so a
/// commit does not pay for them.
///
/// SQLite's default is to checkpoint inside the commit that takes the WAL past 1,000
/// frames. That commit copies every page in the WAL into the database file and syncs both
/// files, which on this project's machines is a stall of milliseconds every few hundred
/// commits (each of this backend's commits writes two frames: the row and the change log's
/// tail). SQLite's documentation suggests the alternative used here: the writer
/// connection's WAL hook (which replaces the automatic checkpoint) asks for a `PASSIVE`
/// checkpoint on another connection past ``backgroundFrames``. A passive checkpoint takes
/// no lock that writers or readers wait for.
///
/// Passive checkpoints cannot reset the WAL while writes keep arriving (the WAL restarts
/// only when a writer begins after every frame was copied), so past ``inlineFrames`` the
/// writer checkpoints in its own commit as SQLite would. While a background checkpoint is
/// still running the writer's gets SQLITE_BUSY and the next commit tries again; past
/// ``waitingFrames`` the writer waits for the running one first. That bounds the WAL file
/// at about ``inlineFrames`` pages, and at ``waitingFrames`` under load. Errors of
/// background checkpoints are not lost data: the frames
/// stay in the WAL, readable, and the next checkpoint tries again.
final class Checkpointer: @unchecked Sendable {
    // @unchecked: `requested`, `isClosed` and `connection` are guarded by `lock`;
    // `connection` is used only on `queue`.

    /// WAL size, in frames, past which a commit asks for a background checkpoint
    /// (SQLite's own automatic checkpoint threshold).
    static let backgroundFrames: Int32 = 1000
    /// WAL size, in frames, past which the committing writer checkpoints itself, unless a
    /// background checkpoint is running (then the next commit tries again).
    static let inlineFrames: Int32 = 4000
    /// WAL size, in frames, past which the writer waits for a running background checkpoint
    /// so that its own can run: a stall of a checkpoint's syncs, paid only when background
    /// checkpoints fall this far behind.
    static let waitingFrames: Int32 = 6000

    private let path: String
    private let synchronous: String
    private let queue = DispatchQueue(label: "Reservoir.SQLite.checkpoint")
    private let lock = NSLock()
    private var requested = false
    /// The WAL's length, in frames, when the last background checkpoint copied all of it.
    private var checkpointedFrames: Int32 = 0
    /// Background checkpoints run so far (for tests).
    private var runs = 0
    private var isClosed = false
    private var connection: Connection?

    init(path: String, synchronous: String) {
        self.path = path
        self.synchronous = synchronous
    }

    /// Makes `writer`'s commits report the WAL's size to this checkpointer. Replaces the
    /// connection's automatic checkpoint. The checkpointer must outlive the connection.
    func install(on writer: Connection) {
        sqlite3_wal_hook(writer.handle, { context, database, schema, frames in
            guard let context else { return SQLITE_OK }
            let checkpointer = Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue()
            if frames >= Checkpointer.inlineFrames {
                // What SQLite's automatic checkpoint does, past a higher threshold; a failure
                // leaves the frames in the WAL, so it does not fail the commit either.
                if sqlite3_wal_checkpoint_v2(database, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil) == SQLITE_BUSY,
                   frames >= Checkpointer.waitingFrames {
                    // A background checkpoint holds the checkpoint lock, and every commit since
                    // the inline threshold found it so: the WAL grows for as long as it runs
                    // (slow syncs under load). Past this second bound, wait for it, as SQLite's
                    // own checkpoint makes its commit wait, then copy what it left.
                    checkpointer.waitForBackground()
                    _ = sqlite3_wal_checkpoint_v2(database, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
            } else if frames >= Checkpointer.backgroundFrames {
                checkpointer.request(frames: frames)
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Restores `writer` to no WAL hook (and no automatic checkpoint).
    static func uninstall(from writer: Connection) {
        sqlite3_wal_hook(writer.handle, nil, nil)
    }

    /// Asks for a checkpoint of a WAL of `frames` frames, unless the last background
    /// checkpoint left fewer than ``backgroundFrames`` of them to copy; requests made while one
    /// is waiting to run are one request.
    ///
    /// A checkpoint that copied every frame does not shorten the WAL: the next writer restarts
    /// it, but only when it begins after the checkpoint ended. Commits arriving back to back
    /// begin while it runs, so the WAL kept its length and every commit past the threshold asked
    /// for another checkpoint of its own few frames, two syncs each (520 `fdatasync`s in a run of
    /// 1,000 commits, against 14 for SQLite's own checkpointing). Now one runs per
    /// ``backgroundFrames`` new frames, as SQLite's own would, until the WAL restarts or reaches
    /// ``inlineFrames``.
    func request(frames: Int32) {
        lock.lock()
        defer { lock.unlock() }
        guard !requested, !isClosed else { return }
        // A WAL shorter than the last checkpoint saw was restarted since.
        guard frames < checkpointedFrames || frames - checkpointedFrames >= Self.backgroundFrames else { return }
        requested = true
        queue.async { self.checkpoint() }
    }

    private func checkpoint() {
        lock.lock()
        requested = false
        if isClosed {
            lock.unlock()
            return
        }
        if connection == nil {
            connection = try? Self.open(path, synchronous: synchronous)
        }
        let connection = connection
        runs += 1
        lock.unlock()
        guard let connection else { return }
        // PASSIVE copies what it can without waiting; SQLITE_BUSY (another process's
        // checkpoint running) or an I/O error leaves the frames for the next request.
        var frames: Int32 = 0, copied: Int32 = 0
        if sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied) == SQLITE_OK,
           frames > 0, copied == frames {
            lock.lock()
            checkpointedFrames = frames
            lock.unlock()
        }
    }

    private static func open(_ path: String, synchronous: String) throws -> Connection {
        let connection = try Connection(path: path, create: false, busyTimeout: 0)
        // The checkpoint syncs the WAL and the database file as this setting says; never OFF.
        try connection.execute("PRAGMA synchronous = \(synchronous)")
        return connection
    }

    /// How many background checkpoints have run.
    var checkpointsRun: Int {
        lock.lock()
        defer { lock.unlock() }
        return runs
    }

    /// Returns once the background checkpoints asked for so far have run.
    func waitForBackground() {
        queue.sync {}
    }

    /// Waits for a running checkpoint, then closes the connection. Later requests are ignored.
    func close() {
        lock.lock()
        isClosed = true
        lock.unlock()
        queue.sync {}
        lock.lock()
        let connection = connection
        self.connection = nil
        lock.unlock()
        _ = connection  // closed here, outside the lock
    }
}
