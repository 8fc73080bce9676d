import CSQLiteRaw
import Foundation
import Reservoir

// MARK: - Raw C API

final class RawDatabase {
    let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    init(path: String) {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            fatalError("raw open failed")  // a benchmark on a scratch directory; not library code
        }
        db = handle
        exec("PRAGMA journal_mode = WAL")
        exec("PRAGMA synchronous = NORMAL")
        exec("CREATE TABLE IF NOT EXISTS items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL NOT NULL, count INTEGER NOT NULL, tag TEXT)")
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    func exec(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { fatalError("raw exec failed: \(sql): \(String(cString: sqlite3_errmsg(db)))") }
    }

    func statement(_ sql: String) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
            fatalError("raw prepare failed: \(sql)")
        }
        statements[sql] = statement
        return statement
    }

    func bind(_ text: String, _ statement: OpaquePointer, _ index: Int32) {
        var text = text
        text.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                _ = bench_sqlite3_bind_text_transient(statement, index, $0.baseAddress, Int32($0.count))
            }
        }
    }

    func insert(_ items: [Item]) {
        exec("BEGIN")
        let insert = statement("INSERT INTO items(id, name, score, count, tag) VALUES(?, ?, ?, ?, ?)")
        for item in items {
            sqlite3_bind_int64(insert, 1, Int64(item.id))
            bind(item.name, insert, 2)
            sqlite3_bind_double(insert, 3, item.score)
            sqlite3_bind_int64(insert, 4, Int64(item.count))
            if let tag = item.tag { bind(tag, insert, 5) } else { sqlite3_bind_null(insert, 5) }
            guard sqlite3_step(insert) == SQLITE_DONE else { fatalError("raw insert failed") }
            sqlite3_reset(insert)
        }
        exec("COMMIT")
    }

    /// The bulk insert with texts bound in place (SQLITE_STATIC), the statement stepped
    /// while they are lent: SQLite copies nothing. Not the baseline (C programs commonly bind
    /// SQLITE_TRANSIENT, as the insert above does); `BENCH_PROFILE=rawstaticbulk` times it.
    func insertLendingTexts(_ items: [Item]) {
        exec("BEGIN")
        let insert = statement("INSERT INTO items(id, name, score, count, tag) VALUES(?, ?, ?, ?, ?)")
        func lend(_ text: String, at index: Int32, _ body: () -> Void) {
            var text = text
            text.withUTF8 { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    _ = bench_sqlite3_bind_text_static(insert, index, $0.baseAddress, Int32($0.count))
                    body()
                }
            }
        }
        for item in items {
            sqlite3_bind_int64(insert, 1, Int64(item.id))
            sqlite3_bind_double(insert, 3, item.score)
            sqlite3_bind_int64(insert, 4, Int64(item.count))
            lend(item.name, at: 2) {
                let step = {
                    guard sqlite3_step(insert) == SQLITE_DONE else { fatalError("raw insert failed") }
                    sqlite3_reset(insert)
                }
                if let tag = item.tag {
                    lend(tag, at: 5, step)
                } else {
                    sqlite3_bind_null(insert, 5)
                    step()
                }
            }
        }
        exec("COMMIT")
    }

    func text(_ statement: OpaquePointer, _ index: Int32) -> String {
        let count = Int(sqlite3_column_bytes(statement, index))
        guard let text = sqlite3_column_text(statement, index) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    func item(_ statement: OpaquePointer) -> Item {
        Item(id: Int(sqlite3_column_int64(statement, 0)), name: text(statement, 1), score: sqlite3_column_double(statement, 2),
             count: Int(sqlite3_column_int64(statement, 3)),
             tag: sqlite3_column_type(statement, 4) == SQLITE_NULL ? nil : text(statement, 4))
    }

    func fetchAllSorted() -> [Item] {
        let select = statement("SELECT id, name, score, count, tag FROM items ORDER BY name, id")
        defer { sqlite3_reset(select) }
        var result: [Item] = []
        while sqlite3_step(select) == SQLITE_ROW { result.append(item(select)) }
        return result
    }

    func get(_ id: Int) -> Item? {
        let select = statement("SELECT id, name, score, count, tag FROM items WHERE id = ?")
        defer { sqlite3_reset(select) }
        sqlite3_bind_int64(select, 1, Int64(id))
        return sqlite3_step(select) == SQLITE_ROW ? item(select) : nil
    }

    func update(_ item: Item) {
        let update = statement("UPDATE items SET name = ?, score = ?, count = ?, tag = ? WHERE id = ?")
        bind(item.name, update, 1)
        sqlite3_bind_double(update, 2, item.score)
        sqlite3_bind_int64(update, 3, Int64(item.count))
        if let tag = item.tag { bind(tag, update, 4) } else { sqlite3_bind_null(update, 4) }
        sqlite3_bind_int64(update, 5, Int64(item.id))
        guard sqlite3_step(update) == SQLITE_DONE else { fatalError("raw update failed") }
        sqlite3_reset(update)
    }
}
