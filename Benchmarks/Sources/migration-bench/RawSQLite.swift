import BenchSupport
import CSQLiteRaw
import Foundation

/// The migration written by hand against SQLite's C API: `bench_notes(id INTEGER PRIMARY KEY,
/// title, priority)` with untyped columns (as Reservoir's tables, so a value keeps its kind), WAL
/// and `synchronous = NORMAL` (Reservoir's `durability=normal`). The migration is one
/// `BEGIN IMMEDIATE … COMMIT`: `ALTER TABLE … RENAME COLUMN`, one `UPDATE` converting the
/// priorities in SQL, `CREATE INDEX`, `PRAGMA user_version`. The row-loop side does the type
/// change as an app with a transform SQL cannot express would: each row read, converted in
/// Swift, written back with a prepared `UPDATE`.
final class RawSQLite {
    let db: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open(path, &handle) == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            throw BenchError("raw sqlite: cannot open \(path)")
        }
        db = handle
        try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
    }

    deinit { sqlite3_close_v2(db) }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchError("raw sqlite: \(sql.prefix(60)): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw BenchError("raw sqlite: prepare \(sql.prefix(60)): \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }

    static func path(_ place: Place) -> String { place.directory + "/raw.sqlite" }

    static func seed(_ place: Place, records: Int) throws {
        let database = try RawSQLite(path: path(place))
        try database.exec("CREATE TABLE bench_notes(id INTEGER PRIMARY KEY, title, priority); PRAGMA user_version = 1; BEGIN")
        let insert = try database.prepare("INSERT INTO bench_notes(id, title, priority) VALUES(?1, ?2, ?3)")
        defer { sqlite3_finalize(insert) }
        for id in 0..<records {
            sqlite3_bind_int64(insert, 1, Int64(id))
            var title = Note.title(id)
            title.withUTF8 { _ = bench_sqlite3_bind_text_transient(insert, 2, UnsafeRawPointer($0.baseAddress)?.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
            sqlite3_bind_int64(insert, 3, Int64(Note.priority(id)))
            guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchError("raw sqlite: insert: \(String(cString: sqlite3_errmsg(database.db)))") }
            sqlite3_reset(insert)
        }
        try database.exec("COMMIT; PRAGMA wal_checkpoint(TRUNCATE)")
    }

    static func migrateInSQL(_ place: Place) throws {
        let database = try RawSQLite(path: path(place))
        try database.exec("""
            BEGIN IMMEDIATE;
            ALTER TABLE bench_notes RENAME COLUMN title TO name;
            UPDATE bench_notes SET priority = CAST(priority AS TEXT);
            CREATE INDEX bench_notes_name ON bench_notes(name);
            PRAGMA user_version = 2;
            COMMIT
            """)
    }

    static func migrateRowByRow(_ place: Place) throws {
        let database = try RawSQLite(path: path(place))
        try database.exec("BEGIN IMMEDIATE; ALTER TABLE bench_notes RENAME COLUMN title TO name")
        let select = try database.prepare("SELECT id, priority FROM bench_notes ORDER BY id")
        defer { sqlite3_finalize(select) }
        let update = try database.prepare("UPDATE bench_notes SET priority = ?2 WHERE id = ?1")
        defer { sqlite3_finalize(update) }
        // Updating the rows the SELECT is stepping through is fine here: the new values are the
        // same size class and no row moves (rowid table, ordered by rowid).
        while sqlite3_step(select) == SQLITE_ROW {
            let id = sqlite3_column_int64(select, 0)
            var converted = String(sqlite3_column_int64(select, 1))
            sqlite3_bind_int64(update, 1, id)
            converted.withUTF8 { _ = bench_sqlite3_bind_text_transient(update, 2, UnsafeRawPointer($0.baseAddress)?.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
            guard sqlite3_step(update) == SQLITE_DONE else { throw BenchError("raw sqlite: update: \(String(cString: sqlite3_errmsg(database.db)))") }
            sqlite3_reset(update)
        }
        try database.exec("CREATE INDEX bench_notes_name ON bench_notes(name); PRAGMA user_version = 2; COMMIT")
    }

    /// Checks every row, the index and the version, with the C API.
    static func verify(_ place: Place, records: Int) throws {
        let database = try RawSQLite(path: path(place))
        let check = try database.prepare("SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master WHERE name = 'bench_notes_name')")
        defer { sqlite3_finalize(check) }
        guard sqlite3_step(check) == SQLITE_ROW, sqlite3_column_int64(check, 0) == 2, sqlite3_column_int64(check, 1) == 1 else {
            throw BenchError("raw sqlite: not at version 2 with the index")
        }
        let select = try database.prepare("SELECT id, name, priority, typeof(priority) FROM bench_notes ORDER BY id")
        defer { sqlite3_finalize(select) }
        var count = 0
        while sqlite3_step(select) == SQLITE_ROW {
            let id = Int(sqlite3_column_int64(select, 0))
            guard String(cString: sqlite3_column_text(select, 1)) == Note.title(id),
                  String(cString: sqlite3_column_text(select, 2)) == Note.migratedPriority(id),
                  String(cString: sqlite3_column_text(select, 3)) == "text"
            else { throw BenchError("raw sqlite: record \(id) is not migrated") }
            count += 1
        }
        guard count == records else { throw BenchError("raw sqlite: \(count) records, expected \(records)") }
    }

    static let side = Side(name: "raw-sqlite", engine: "sqlite", label: "hand-written SQL, C API",
                           seed: { try seed($0, records: $1) }, migrate: { try migrateInSQL($0) }, verify: { try verify($0, records: $1) })
    static let rowLoopSide = Side(name: "raw-sqlite-rows", engine: "sqlite", label: "C API, transform per row in Swift",
                                  seed: { try seed($0, records: $1) }, migrate: { try migrateRowByRow($0) }, verify: { try verify($0, records: $1) })
}
