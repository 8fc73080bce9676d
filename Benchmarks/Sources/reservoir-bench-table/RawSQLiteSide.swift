import BenchSupport
import CSQLiteRaw
import Foundation

/// The raw SQLite C API, as a careful C program would use it: prepared statements kept for
/// reuse, texts bound SQLITE_TRANSIENT, WAL with synchronous=NORMAL, the group column indexed.
final class RawSQLiteSide: BenchSide {
    let column = TableColumn.rawSQLite
    /// Group reads keep each group's records in an array (``GroupSink``).
    var collectsGroups = false
    private var db: OpaquePointer?
    private var directory: URL?
    private var statements: [String: OpaquePointer] = [:]

    func reset() throws {
        close()
        let directory = try scratchDirectory("raw-sqlite")
        self.directory = directory
        var handle: OpaquePointer?
        let path = directory.appendingPathComponent("raw.sqlite").path
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            throw BenchError("raw SQLite could not open \(path)")
        }
        db = handle
        try exec("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = NORMAL")
        try exec("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL NOT NULL, rank INTEGER NOT NULL, grp INTEGER NOT NULL)")
        try exec("CREATE INDEX items_grp ON items(grp)")
    }

    private func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
    }

    private func failure(_ what: String) -> BenchError {
        BenchError("raw SQLite: \(what): \(db.map { String(cString: sqlite3_errmsg($0)) } ?? "not open")")
    }

    private func statement(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
            throw failure(sql)
        }
        statements[sql] = statement
        return statement
    }

    private func bind(_ text: String, _ statement: OpaquePointer, _ index: Int32) {
        var text = text
        text.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                _ = bench_sqlite3_bind_text_transient(statement, index, $0.baseAddress, Int32($0.count))
            }
        }
    }

    private func step(_ statement: OpaquePointer, _ what: String) throws {
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_DONE else { throw failure(what) }
    }

    private func write(_ record: BenchRecord, with sql: String) throws {
        let statement = try statement(sql)
        bind(record.name, statement, 1)
        sqlite3_bind_double(statement, 2, record.score)
        sqlite3_bind_int64(statement, 3, Int64(record.rank))
        sqlite3_bind_int64(statement, 4, Int64(record.group))
        sqlite3_bind_int64(statement, 5, Int64(record.id))
        try step(statement, sql)
    }

    private static let insertSQL = "INSERT INTO items(name, score, rank, grp, id) VALUES(?, ?, ?, ?, ?)"
    private static let updateSQL = "UPDATE items SET name = ?, score = ?, rank = ?, grp = ? WHERE id = ?"

    func insert(_ records: ArraySlice<BenchRecord>) throws {
        try exec("BEGIN")
        for record in records { try write(record, with: Self.insertSQL) }
        try exec("COMMIT")
    }

    private func text(_ statement: OpaquePointer, _ index: Int32) -> String {
        let count = Int(sqlite3_column_bytes(statement, index))
        guard let text = sqlite3_column_text(statement, index) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    private func record(_ statement: OpaquePointer) -> BenchRecord {
        BenchRecord(id: Int(sqlite3_column_int64(statement, 0)), name: text(statement, 1), score: sqlite3_column_double(statement, 2),
                    rank: Int(sqlite3_column_int64(statement, 3)), group: Int(sqlite3_column_int64(statement, 4)))
    }

    func fetchSorted() throws -> [Int] {
        let select = try statement("SELECT id, name, score, rank, grp FROM items ORDER BY rank, name")
        defer { sqlite3_reset(select) }
        var result: [BenchRecord] = []
        while sqlite3_step(select) == SQLITE_ROW { result.append(record(select)) }
        return result.map(\.id)
    }

    func pointReads(_ ids: [Int]) throws -> Int {
        let select = try statement("SELECT id, name, score, rank, grp FROM items WHERE id = ?")
        var checksum = 0
        for id in ids {
            sqlite3_bind_int64(select, 1, Int64(id))
            if sqlite3_step(select) == SQLITE_ROW { checksum &+= record(select).rank }
            sqlite3_reset(select)
        }
        return checksum
    }

    func groupReads(_ groups: [Int]) throws -> Int {
        let select = try statement("SELECT id, name, score, rank, grp FROM items WHERE grp = ? ORDER BY id")
        var sink = GroupSink(collects: collectsGroups)
        for group in groups {
            sqlite3_bind_int64(select, 1, Int64(group))
            while sqlite3_step(select) == SQLITE_ROW {
                sink.take(record(select))
            }
            sqlite3_reset(select)
            sink.endGroup()
        }
        return sink.checksum
    }

    func commitEach(_ records: [BenchRecord]) throws {
        for record in records { try write(record, with: Self.updateSQL) }
    }

    func updateAll(_ records: [BenchRecord]) throws {
        try exec("BEGIN")
        for record in records { try write(record, with: Self.updateSQL) }
        try exec("COMMIT")
    }

    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        if let db { sqlite3_close_v2(db) }
        db = nil
        if let directory { try? FileManager.default.removeItem(at: directory) }
        directory = nil
    }

    deinit { close() }
}

/// The SQLite library the raw side links.
func sqliteVersion() -> String? {
    String(cString: sqlite3_libversion())
}
