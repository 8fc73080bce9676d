import CSQLite
import Foundation
import ReservoirConformance
import Testing

/// The tool on damaged stores: `info` and `verify` fail with one clear line or a report,
/// never a crash; `copy` saves what is readable and names what was not.
@Suite("reservoir on damaged stores")
struct DamageTests {
    @Test("the issue's reproduction: 30 todos, data.mdb truncated to 16 KiB, then info and verify")
    func truncatedLMDB() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let store = ["--store", "lmdb:./todos.lmdb"]
        for index in 0..<30 { _ = try await CLIProcess.run(["todo", "add", "todo \(index)"] + store, in: scratch.url) }
        let intact = try await CLIProcess.run(["verify"] + store, in: scratch.url)
        #expect(intact.status == 0 && intact.output.hasSuffix("intact\n"), "\(intact.output) \(intact.errors)")
        #expect(intact.output.contains("todos: 30 rows read"), "\(intact.output)")
        #expect(truncate(scratch.url.appendingPathComponent("todos.lmdb/data.mdb").path, 16_384) == 0)
        let info = try await CLIProcess.run(["info"] + store, in: scratch.url)
        #expect(info.status == 1, "an error exit, not a signal: \(info.status) \(info.errors)")
        #expect(info.errors.contains("data.mdb is damaged") && info.errors.split(separator: "\n").count == 1, "\(info.errors)")
        let verify = try await CLIProcess.run(["verify"] + store, in: scratch.url)
        #expect(verify.status == 1 && verify.output.contains("damaged: ") && verify.output.contains("truncated"), "\(verify.output) \(verify.errors)")
    }

    @Test("copy from a SQLite store with a table page overwritten saves the records on either side of it")
    func salvagingCopy() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        _ = try await CLIProcess.run(["todo", "add", "first", "--store", "sqlite:./damaged.sqlite"], in: scratch.url)
        let path = scratch.url.appendingPathComponent("damaged.sqlite").path
        var db: OpaquePointer?
        try #require(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
        var sql = "BEGIN;"
        for index in 0..<400 {
            let id = String(format: "00000000-0000-0000-0000-%012d", index)
            sql += "INSERT INTO todos(id, title, done, priority, created) VALUES ('\(id)', 'marker-\(index)-\(String(repeating: "t", count: 300))', 0, 1, 817000000);"
        }
        sql += "COMMIT;"
        #expect(sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK)
        sqlite3_close_v2(db)
        // Overwrite the table leaf holding record 200.
        let data = try #require(FileManager.default.contents(atPath: path))
        let marker = try #require(data.range(of: Data("marker-200-".utf8)))
        let page = marker.lowerBound / 4096 * 4096
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(page))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()

        let verify = try await CLIProcess.run(["verify", "--store", "sqlite:./damaged.sqlite"], in: scratch.url)
        #expect(verify.status == 1 && verify.output.contains("damaged: "), "\(verify.output) \(verify.errors)")
        let copy = try await CLIProcess.run(["copy", "sqlite:./damaged.sqlite", "sqlite:./saved.sqlite"], in: scratch.url)
        #expect(copy.status == 1, "a partial copy exits non-zero: \(copy.status) \(copy.output) \(copy.errors)")
        #expect(copy.output.contains("unreadable: todos: the records with ids after"), "\(copy.output)")
        #expect(copy.errors.contains("damaged.sqlite is damaged"), "\(copy.errors)")
        let info = try await CLIProcess.run(["info", "--json", "--store", "sqlite:./saved.sqlite"], in: scratch.url)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(info.output.utf8)) as? [String: Any])
        let saved = try #require((object["types"] as? [String: Any])?["todos"] as? Int)
        // One leaf of about a dozen records is lost; the records before and after it are saved.
        #expect(saved > 350 && saved < 401, "saved \(saved) of 401")
        let savedVerify = try await CLIProcess.run(["verify", "--store", "sqlite:./saved.sqlite"], in: scratch.url)
        #expect(savedVerify.status == 0, "\(savedVerify.output)")
    }
}
