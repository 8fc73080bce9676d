import CSQLite
import Reservoir

/// SQLite result codes the backend compares errors against, kept in one place. The
/// extended codes are macros Swift does not import; the primary ones are imported as is.
enum SQLiteCode {
    /// SQLITE_ERROR itself, with no extended code: the generic error, which is also what a
    /// cached statement reports once its table was dropped.
    static let error = SQLITE_ERROR
    /// SQLITE_CONSTRAINT_PRIMARYKEY: an existing id, in a `WITHOUT ROWID` table or an
    /// `INTEGER PRIMARY KEY` rowid table.
    static let primaryKeyConstraint = SQLITE_CONSTRAINT | 6 << 8
    /// SQLITE_CONSTRAINT_ROWID: an existing rowid, should SQLite report it so.
    static let rowidConstraint = SQLITE_CONSTRAINT | 10 << 8

    /// The primary code (`SQLITE_BUSY`, `SQLITE_NOTADB`, …) of a primary or extended result
    /// code: extended codes keep the primary one in their low byte.
    static func primary(_ result: Int32) -> Int32 {
        result & 0xff
    }
}

/// Maps SQLite result codes to ``ReservoirError``s that name the database file and
/// carry SQLite's own code and message.
enum SQLiteFailure {
    /// The ``ReservoirError/Code`` for a SQLite primary or extended result code.
    static func code(for result: Int32, opening: Bool = false) -> ReservoirError.Code {
        switch SQLiteCode.primary(result) {
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy
        case SQLITE_FULL: return .full
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH: return .cannotOpen
        case SQLITE_NOTADB: return opening ? .cannotOpen : .corrupt
        case SQLITE_CORRUPT: return .corrupt
        case SQLITE_READONLY: return opening ? .cannotOpen : .backend
        // An existing id is .duplicateID before this; other constraints and a trigger's RAISE.
        case SQLITE_CONSTRAINT: return .refused
        default: return .backend
        }
    }

    /// A short English cause for the common codes, to lead the message with.
    static func cause(for result: Int32) -> String {
        switch SQLiteCode.primary(result) {
        case SQLITE_BUSY: return "the database is locked by another connection or process for longer than the busy timeout"
        case SQLITE_LOCKED: return "a table is locked by another statement on the same connection"
        case SQLITE_FULL: return "the disk (or the database's size limit) is full"
        case SQLITE_CANTOPEN: return "the file cannot be opened"
        case SQLITE_PERM: return "access is denied"
        case SQLITE_NOTADB: return "the file is not a SQLite database"
        case SQLITE_CORRUPT: return "the database file is damaged"
        case SQLITE_READONLY: return "the database is read-only"
        case SQLITE_IOERR: return "a disk I/O error occurred"
        case SQLITE_CONSTRAINT: return "a constraint failed"
        case SQLITE_MISMATCH: return "a value has the wrong type for its column"
        case SQLITE_TOOBIG: return "a value or statement is too big"
        default:
            guard let text = sqlite3_errstr(result) else { return "SQLite error \(result)" }
            return String(cString: text)
        }
    }

    /// An error for `result` that occurred while `action`, on the database at `path`.
    static func error(_ result: Int32, path: String, action: String, nativeMessage: String?, opening: Bool = false) -> ReservoirError {
        let native = nativeMessage ?? sqlite3_errstr(result).map { String(cString: $0) }
        return ReservoirError(
            code(for: result, opening: opening),
            "\(sqliteStore(path)): cannot \(action): \(cause(for: result))",
            nativeCode: result,
            nativeMessage: native
        )
    }
}

/// The store at `path` as messages name it (``StoreConfiguration/storeName(_:_:)``).
func sqliteStore(_ path: String) -> String { StoreConfiguration.storeName("SQLite", path) }
