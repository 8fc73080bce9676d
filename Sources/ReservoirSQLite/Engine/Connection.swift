import CSQLite
import Foundation
import Reservoir

/// Owns one `sqlite3` connection and its cache of prepared statements.
///
/// Not thread-safe: the backend hands each connection to one thread at a time
/// (the writer under its lock, readers through the pool).
final class Connection {
    let handle: OpaquePointer
    let path: String
    private var statements: [String: Statement] = [:]
    /// The statement ``cached(_:)`` returned last, one of `statements`.
    private var lastCached: Statement?
    /// The statements every transaction runs, held apart from `statements` so running them
    /// costs no lookup (hashing their SQL).
    private var held: [Statement?] = Array(repeating: nil, count: HeldStatement.allCases.count)

    /// Opens (creating when `create`; for reading only when `readOnly`) the database at
    /// `path`, with a busy timeout so other processes' locks are waited for instead of
    /// failing at once.
    /// `immutable`: read-only without shared memory (`?immutable=1`), for a WAL file in a
    /// directory this process may not write, where no `-shm` can be made.
    init(path: String, create: Bool, busyTimeout: Int32, readOnly: Bool = false, immutable: Bool = false) throws {
        var database: OpaquePointer?
        var flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        var name = path
        if immutable {
            flags |= SQLITE_OPEN_URI
            let escaped = path.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "?", with: "%3f").replacingOccurrences(of: "#", with: "%23")
            name = "file:" + escaped + "?immutable=1"
        }
        let result = sqlite3_open_v2(name, &database, flags, nil)
        guard result == SQLITE_OK, let database else {
            let message = database.map { String(cString: sqlite3_errmsg($0)) }
            sqlite3_close_v2(database)
            throw Self.openError(result, path: path, nativeMessage: message)
        }
        self.handle = database
        self.path = path
        sqlite3_extended_result_codes(database, 1)
        sqlite3_busy_timeout(database, busyTimeout)
    }

    deinit {
        lastCached = nil
        statements.removeAll()
        held.removeAll()
        sqlite3_close_v2(handle)
    }

    func setBusyTimeout(_ milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Stops the change-log triggers from firing on this connection: the writer logs
    /// this library's changes itself, one row per change set and kind (see ``ChangeLog``).
    func disableTriggers() throws {
        guard reservoir_sqlite3_enable_triggers(handle, 0) == 0 else {
            throw ReservoirError(.backend, "\(sqliteStore(path)): cannot turn off triggers on the writer connection (SQLITE_DBCONFIG_ENABLE_TRIGGER); SQLite \(String(cString: sqlite3_libversion())) is too old")
        }
    }

    // MARK: - Statements

    /// The cached prepared statement for `sql`, reset and ready to bind.
    @inline(__always)
    func cached(_ sql: String) throws -> Statement {
        // Runs of reads prepare one query again and again: comparing its SQL with the last
        // one's costs a tenth of hashing it to look it up.
        if let last = lastCached, last.sql == sql {
            last.reset()
            return last
        }
        if let statement = statements[sql] {
            statement.reset()
            lastCached = statement
            return statement
        }
        let statement = try Statement(database: handle, path: path, sql: sql)
        statements[sql] = statement
        lastCached = statement
        return statement
    }

    /// The statement for `which`, prepared on first use, reset and ready to bind.
    @inline(__always)
    func statement(_ which: HeldStatement) throws -> Statement {
        if let statement = held[which.rawValue] {
            statement.reset()
            return statement
        }
        let statement = try Statement(database: handle, path: path, sql: which.sql)
        held[which.rawValue] = statement
        return statement
    }

    /// The pager's data version (`SQLITE_FCNTL_DATA_VERSION`): it changes with every
    /// commit to the file, this connection's own included, and is read without running a
    /// statement. Nil when SQLite cannot report it (older than 3.26).
    func dataVersion() -> UInt32? {
        var version: UInt32 = 0
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else { return nil }
        return version
    }

    /// Runs one or more statements without results (DDL, pragmas, transaction control).
    func execute(_ sql: String, action: String? = nil) throws {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        guard result == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteFailure.error(result, path: path, action: action ?? "run \(Statement.shorten(sql))", nativeMessage: text)
        }
    }

    /// Runs a cached statement with `parameters` and returns its first column of its first row.
    func scalar(_ sql: String, _ parameters: [Value] = []) throws -> Value {
        let statement = try cached(sql)
        defer { statement.reset() }
        for (offset, value) in parameters.enumerated() {
            try statement.bind(value, at: Int32(offset + 1))
        }
        return try statement.step() ? statement.value(at: 0) : .null
    }

    /// Runs a cached statement with `parameters`, ignoring results.
    func run(_ sql: String, _ parameters: [Value] = []) throws {
        let statement = try cached(sql)
        for (offset, value) in parameters.enumerated() {
            try statement.bind(value, at: Int32(offset + 1))
        }
        try statement.run()
    }

    /// Whether the connection is inside an explicit transaction.
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The rowid of the last row inserted on this connection.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The number of rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { Int(sqlite3_changes64(handle)) }

    func error(_ result: Int32, action: String) -> ReservoirError {
        SQLiteFailure.error(result, path: path, action: action, nativeMessage: String(cString: sqlite3_errmsg(handle)))
    }

    // MARK: - Opening errors

    private static func openError(_ result: Int32, path: String, nativeMessage: String?) -> ReservoirError {
        var error = SQLiteFailure.error(result, path: path, action: "open it", nativeMessage: nativeMessage, opening: true)
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            error.message = "\(sqliteStore(path)): cannot open it: the directory \"\(directory)\" does not exist (create it first)"
        } else if !isDirectory.boolValue {
            error.message = "\(sqliteStore(path)): cannot open it: \"\(directory)\" is not a directory"
        } else if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            error.message = "\(sqliteStore(path)): cannot open it: the path is a directory, not a database file"
        }
        return error
    }
}

/// The statements every read or write transaction runs, which ``Connection/statement(_:)``
/// keeps at hand.
enum HeldStatement: Int, CaseIterable {
    case beginDeferred
    case beginImmediate
    case commit
    case rollback
    case logChange
    case schemaVersion

    var sql: String {
        switch self {
        case .beginDeferred: "BEGIN DEFERRED"
        case .beginImmediate: "BEGIN IMMEDIATE"
        case .commit: "COMMIT"
        case .rollback: "ROLLBACK"
        case .logChange: "INSERT INTO _reservoir_changes(entity, id, kind, ids, sequence, commit_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6)"
        case .schemaVersion: "PRAGMA schema_version"
        }
    }
}
