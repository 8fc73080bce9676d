import CLMDB
import Foundation
import Reservoir

/// A failed LMDB (or system) call, before it is given a message: lets the write path
/// tell "map full, grow and replay" apart from real failures.
struct LMDBFailure: Error {
    let code: Int32
    /// What was being done, for the message ("put a row", "begin a read transaction").
    let operation: String
}

/// Throws ``LMDBFailure`` when `rc` is not `MDB_SUCCESS`.
@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
    if rc != 0 { throw LMDBFailure(code: rc, operation: operation()) }
}

enum LMDBErrors {
    /// LMDB's (or the system's) message for a result code.
    static func message(_ code: Int32) -> String {
        guard let text = mdb_strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    /// The ``ReservoirError`` for a failed call on the environment at `path`.
    static func error(_ failure: LMDBFailure, path: String) -> ReservoirError {
        error(code: failure.code, "\(lmdbStore(path)): cannot \(failure.operation)")
    }

    /// The ``ReservoirError`` for `code`, with `message` naming the path and what failed.
    static func error(code: Int32, _ message: String) -> ReservoirError {
        let kind: ReservoirError.Code
        var hint = ""
        switch code {
        case CLMDB_MAP_FULL:
            kind = .full
            hint = "; the map is full and may not grow further (raise maxmapsize)"
        case ENOSPC, EDQUOT:
            kind = .full
            hint = "; the disk is full"
        case EFBIG:
            kind = .full
            hint = "; the file may not grow (file size limit)"
        case CLMDB_TXN_FULL:
            kind = .full
            hint = "; the transaction touches too many pages, split it into smaller ones"
        case CLMDB_READERS_FULL:
            kind = .busy
            hint = "; every reader slot is taken (raise maxreaders, or close read transactions)"
        case CLMDB_INVALID, CLMDB_VERSION_MISMATCH:
            kind = .cannotOpen
            hint = "; it is not an LMDB environment this library version can read"
        case CLMDB_CORRUPTED, CLMDB_PAGE_NOTFOUND, CLMDB_PANIC:
            kind = .corrupt
        case EACCES, EROFS, EPERM:
            kind = .cannotOpen
        case EAGAIN, EBUSY:
            kind = .busy
        default:
            kind = .backend
        }
        return ReservoirError(kind, message + hint, nativeCode: code, nativeMessage: LMDBErrors.message(code))
    }

    /// Converts internal failures to ``ReservoirError``s naming `path`; passes others through.
    /// `path` is read only for a failure: read eagerly, every read retained and released it.
    static func convert<R>(path: @autoclosure () -> String, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let failure as LMDBFailure {
            throw error(failure, path: path())
        }
    }
}

/// The environment at `path` as messages name it (``StoreConfiguration/storeName(_:_:)``).
func lmdbStore(_ path: String) -> String { StoreConfiguration.storeName("LMDB", path) }
