import CSQLite
import Foundation
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// A store whose newest commits are lost (an older copy restored under a live watch, as a
/// backup restore, or `synchronous=NORMAL` and a power loss, leaves it) hands their sequence
/// numbers out again: ``LostTail``, with the loss made by restoring an older copy with
/// SQLite's backup API (#30 item 1).
@Suite struct LostTailTests {
    /// Copies the database at `source` into `target`, page by page, with SQLite's online
    /// backup API. Into the live store, it is a restore the store's connections see as
    /// another client's commit.
    static func copyDatabase(from source: String, to target: String) throws {
        var from: OpaquePointer?
        var to: OpaquePointer?
        defer {
            sqlite3_close_v2(from)
            sqlite3_close_v2(to)
        }
        guard sqlite3_open_v2(source, &from, SQLITE_OPEN_READONLY, nil) == SQLITE_OK,
              sqlite3_open_v2(target, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            throw ReservoirError(.cannotOpen, "could not open \(source) or \(target) for a backup")
        }
        sqlite3_busy_timeout(to, 5000)
        guard let backup = sqlite3_backup_init(to, "main", from, "main") else {
            throw ReservoirError(.backend, "backup of \(source) to \(target) did not start: \(String(cString: sqlite3_errmsg(to)))")
        }
        var result = SQLITE_OK
        repeat {
            result = sqlite3_backup_step(backup, -1)
            if result == SQLITE_BUSY || result == SQLITE_LOCKED { usleep(1000) }
        } while result == SQLITE_OK || result == SQLITE_BUSY || result == SQLITE_LOCKED
        sqlite3_backup_finish(backup)
        guard result == SQLITE_DONE else {
            throw ReservoirError(.backend, "backup of \(source) to \(target) failed", nativeCode: result)
        }
    }

    @Test(arguments: LostTail.After.allCases)
    func aLiveWatchReReadsWhenCommitsItSawAreLost(after: LostTail.After) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.databasePath
        let watcher = try openStore(path)
        defer { watcher.close() }
        let other = try openStore(path)
        defer { other.close() }
        let backup = directory.file("backup.sqlite")
        let problems = try await LostTail.run(
            after: after, watcher: watcher, other: other, losing: other,
            prepare: { try Self.copyDatabase(from: path, to: backup) },
            lose: { try Self.copyDatabase(from: backup, to: path) })
        #expect(problems.isEmpty, "\(problems)")
    }
}
