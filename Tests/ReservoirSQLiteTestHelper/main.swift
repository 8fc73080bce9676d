// A second process for the SQLite backend's multi-process tests.
//
//     ReservoirSQLiteTestHelper PATH store ID TITLE   commit one "todos" record through Reservoir
//     ReservoirSQLiteTestHelper PATH sql STATEMENT    run plain SQL through the C API, as any client would
//     ReservoirSQLiteTestHelper PATH many FIRST COUNT commit records FIRST..<FIRST+COUNT, one per transaction
//     ReservoirSQLiteTestHelper PATH crash COUNT      commit COUNT records one by one, then die by SIGKILL
//                                                   without closing anything (a killed process)
//
// Prints "committed <CLOCK_MONOTONIC nanoseconds>" after the commit; exits 1 with the error otherwise.
import CSQLite
import Foundation
import Reservoir
import ReservoirSQLite

func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    fail("usage: ReservoirSQLiteTestHelper PATH store ID TITLE | PATH sql STATEMENT | PATH crash COUNT")
}
let path = arguments[1]

switch arguments[2] {
case "store":
    guard arguments.count == 5, let id = Int64(arguments[3]) else { fail("store needs ID (an integer) and TITLE") }
    let entity = EntityDescription(name: "todos", fields: ["id", "title", "done", "priority", "note"], indexes: ["priority"], integerIDs: true)
    do {
        let store = try Store.open("sqlite:" + path, registry: BackendRegistry([.sqlite]))
        try store.write { tx in
            _ = try tx.putRow(Row([("id", .integer(id)), ("title", .text(arguments[4])), ("done", 0), ("priority", 1), ("note", nil)]), in: entity)
        }
        print("committed \(monotonicNanoseconds())")
        store.close()
    } catch {
        fail("\(error)")
    }

case "sql":
    var database: OpaquePointer?
    guard sqlite3_open_v2(path, &database, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let database else {
        fail("cannot open \(path)")
    }
    sqlite3_busy_timeout(database, 5000)
    var message: UnsafeMutablePointer<CChar>?
    guard sqlite3_exec(database, arguments[3], nil, nil, &message) == SQLITE_OK else {
        fail("SQL failed: " + (message.map { String(cString: $0) } ?? "?"))
    }
    print("committed \(monotonicNanoseconds())")
    sqlite3_close_v2(database)

case "many":
    guard arguments.count == 5, let first = Int64(arguments[3]), let count = Int64(arguments[4]), count > 0 else {
        fail("many needs FIRST and COUNT, integers")
    }
    let entity = EntityDescription(name: "todos", fields: ["id", "title", "done", "priority", "note"], indexes: ["priority"], integerIDs: true)
    do {
        let store = try Store.open("sqlite:" + path, registry: BackendRegistry([.sqlite]))
        for id in first..<(first + count) {
            try store.write { tx in
                _ = try tx.putRow(Row([("id", .integer(id)), ("title", .text("many \(id)")), ("done", 0), ("priority", 1), ("note", nil)]), in: entity)
            }
        }
        print("committed \(monotonicNanoseconds())")
        store.close()
    } catch {
        fail("\(error)")
    }

case "crash":
    guard let count = Int64(arguments[3]), count > 0 else { fail("crash needs COUNT, a positive integer") }
    let entity = EntityDescription(name: "todos", fields: ["id", "title", "done", "priority", "note"], indexes: ["priority"], integerIDs: true)
    do {
        let store = try Store.open("sqlite:" + path, registry: BackendRegistry([.sqlite]))
        for id in 1...count {
            try store.write { tx in
                _ = try tx.putRow(Row([("id", .integer(id)), ("title", .text("crash \(id)")), ("done", 0), ("priority", 1), ("note", nil)]), in: entity)
            }
        }
        print("committed \(monotonicNanoseconds())")
        fflush(nil)
        kill(getpid(), SIGKILL)
        _ = store  // never reached: the store is not closed
    } catch {
        fail("\(error)")
    }

default:
    fail("unknown mode \(arguments[2]); expected store or sql")
}
