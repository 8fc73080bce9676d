import CSQLite
import Foundation
import Reservoir
import ReservoirConformance
import ReservoirSQLite

extension TemporaryDirectory {
    /// The SQLite database file these tests open in the directory.
    var databasePath: String { file("db.sqlite") }
}

let sqliteRegistry = BackendRegistry([.sqlite])

func openStore(_ path: String, options: String = "") throws -> Store {
    try Store.open("sqlite:" + path + options, registry: sqliteRegistry)
}

/// A plain sqlite3 connection, standing for "another SQLite client".
final class RawConnection {
    let handle: OpaquePointer

    init(_ path: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw ReservoirError(.cannotOpen, "raw open of \(path) failed")
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "?"
            sqlite3_free(message)
            throw ReservoirError(.backend, "raw SQL failed: \(text): \(sql)", nativeCode: result)
        }
    }

    /// Rows of text-rendered columns (via sqlite3's own conversion), for layout checks.
    func query(_ sql: String) throws -> [[String?]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw ReservoirError(.backend, "raw prepare failed: \(String(cString: sqlite3_errmsg(handle))): \(sql)")
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String?]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append((0..<sqlite3_column_count(statement)).map { index in
                sqlite3_column_text(statement, index).map { String(cString: $0) }
            })
        }
        return rows
    }
}

// MARK: - Record types

struct Todo: Storable {
    var id: Int
    var title: String
    var done: Bool
    var priority: Int
    var note: String?

    static let schema = Schema<Todo>("todos", fields: [
        .field(\.title), .field(\.done), .field(\.priority, indexed: true), .field(\.note),
    ])
}

struct Measurement: Storable {
    var id: String
    var value: Double?
    var label: String?

    static let schema = Schema<Measurement>("measurements", fields: [.field(\.value), .field(\.label)])
}
