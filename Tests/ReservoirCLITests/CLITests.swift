import CSQLite
import Foundation
import ReservoirConformance
import Testing

@Suite("reservoir command-line tool")
struct CLITests {
    @Test("todo add, list, done and rm, with ids given by prefix")
    func todoFlow() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let store = ["--store", "sqlite:./todos.sqlite"]
        let added = try await CLIProcess.run(["todo", "add", "File taxes", "--priority", "3", "--due", "2026-12-01"] + store, in: scratch.url)
        #expect(added.status == 0, "\(added.errors)")
        let id = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(UUID(uuidString: id) != nil, "todo add prints the new id, got \(id)")
        _ = try await CLIProcess.run(["todo", "add", "Buy milk", "--priority", "2"] + store, in: scratch.url)

        let listed = try await CLIProcess.run(["todo", "list", "--json"] + store, in: scratch.url)
        let todos = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
        #expect(todos.map { $0["title"] as? String } == ["File taxes", "Buy milk"], "sorted by priority")
        #expect(todos.first?["due"] as? String == "2026-12-01", "the day it is due (schema version 2)")

        let done = try await CLIProcess.run(["todo", "done", String(id.prefix(6)).lowercased()] + store, in: scratch.url)
        #expect(done.status == 0 && done.output.contains("done: File taxes"), "\(done.output) \(done.errors)")
        let open = try await CLIProcess.run(["todo", "list", "--open"] + store, in: scratch.url)
        #expect(open.output.contains("Buy milk") && !open.output.contains("File taxes"), "\(open.output)")

        let removed = try await CLIProcess.run(["todo", "rm", String(id.prefix(8))] + store, in: scratch.url)
        #expect(removed.status == 0, "\(removed.errors)")
        let all = try await CLIProcess.run(["todo", "list"] + store, in: scratch.url)
        #expect(all.output.split(separator: "\n").count == 1, "\(all.output)")
    }

    @Test("errors are one line on stderr naming the input, with a non-zero exit", arguments: [
        (["todo", "done", "ffff"], "no to-do has an id starting with \"ffff\""),
        (["todo", "done", "not-hex!"], "\"not-hex!\" is not a to-do id"),
        (["todo", "add", "x", "--due", "next tuesday"], "\"next tuesday\" is not a date"),
        (["todo", "list", "--store", "redis://db"], "unknown scheme \"redis:\""),
        // The server is named with its password hidden, and the cause said.
        (["todo", "list", "--store", "postgres://app:hunter2@127.0.0.1:1/app"], "PostgreSQL store \"postgres://app:***@127.0.0.1:1/app\" (schema public): cannot connect: no PostgreSQL server is listening"),
        (["info", "--store", "sqlite:./no/such/dir/x.sqlite"], "no/such/dir"),
        (["todo", "list", "--store", "lmdb"], "has no scheme"),
    ])
    func errors(_ arguments: [String], _ expected: String) async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let result = try await CLIProcess.run(arguments, in: scratch.url, environment: ["RESERVOIR_STORE": "sqlite:./todos.sqlite"])
        #expect(result.status != 0)
        #expect(result.errors.contains(expected), "stderr: \(result.errors)")
        #expect(result.errors.split(separator: "\n").count == 1, "one line: \(result.errors)")
        #expect(result.output.isEmpty, "nothing on stdout: \(result.output)")
    }

    @Test("the store comes from --store, then RESERVOIR_STORE")
    func storeChoice() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        _ = try await CLIProcess.run(["todo", "add", "from env"], in: scratch.url, environment: ["RESERVOIR_STORE": "sqlite:./env.sqlite"])
        #expect(FileManager.default.fileExists(atPath: scratch.url.appendingPathComponent("env.sqlite").path))
        let info = try await CLIProcess.run(["info", "--json", "--store", "sqlite:./env.sqlite"], in: scratch.url)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(info.output.utf8)) as? [String: Any])
        #expect((object["types"] as? [String: Int])?["todos"] == 1)
        #expect(object["schemaVersion"] as? Int == 2, "a new to-do store is stamped with the newest to-do version: \(object)")
        #expect(object["capabilities"] as? String == "persistent, multi-process, native queries, commit signal, read-only opening")
    }

    @Test("watch shows changes made by another reservoir process and by plain SQL")
    func watchAcrossProcesses() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let store = ["--store", "sqlite:./todos.sqlite"]
        _ = try await CLIProcess.run(["todo", "add", "Buy milk", "--priority", "2"] + store, in: scratch.url)
        let watch = try CLIProcess(["watch", "--open", "--count", "4"] + store, in: scratch.url)
        try await watch.waitForLines(1)
        let added = try await CLIProcess.run(["todo", "add", "File taxes", "--priority", "3"] + store, in: scratch.url)
        try await watch.waitForLines(2)
        try plainSQL(scratch.url.appendingPathComponent("todos.sqlite").path, "UPDATE todos SET priority = 9 WHERE title = 'Buy milk'")
        try await watch.waitForLines(3)
        _ = try await CLIProcess.run(["todo", "done", String(added.output.prefix(8))] + store, in: scratch.url)
        #expect(try await watch.waitForExit(seconds: 15) == 0, "watch exits after --count changes: \(watch.errors)")
        let changes = watch.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(changes.map { $0["count"] as? Int } == [1, 2, 2, 1], "list sizes: \(watch.output)")
        let priorities = changes.compactMap { ($0["inserted"] as? [[String: Any]])?.first?["todo"] as? [String: Any] }.map { $0["priority"] as? Int }
        #expect(priorities == [2, 3, 9], "inserted priorities (the plain SQL update shows as 9): \(watch.output)")
    }

    @Test("watch on lmdb: shows another process's commits")
    func watchLMDB() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let store = ["--store", "lmdb:./todos.lmdb"]
        let watch = try CLIProcess(["watch", "--json", "--count", "3"] + store, in: scratch.url)
        try await watch.waitForLines(1)
        _ = try await CLIProcess.run(["todo", "add", "one", "--priority", "1"] + store, in: scratch.url)
        try await watch.waitForLines(2)
        _ = try await CLIProcess.run(["todo", "add", "two", "--priority", "5"] + store, in: scratch.url)
        #expect(try await watch.waitForExit(seconds: 15) == 0, "\(watch.errors)")
        let counts = watch.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["count"] as? Int }
        #expect(counts == [0, 1, 2], "\(watch.output)")
    }

    @Test("watch quits cleanly on Ctrl-C")
    func watchInterrupt() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let watch = try CLIProcess(["watch", "--store", "sqlite:./todos.sqlite"], in: scratch.url)
        try await watch.waitForLines(1)
        watch.interrupt()
        #expect(try await watch.waitForExit(seconds: 10) == 0, "\(watch.errors)")
    }

    @Test("copy moves every record between stores and verifies the counts")
    func copy() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        for i in 0..<25 {
            _ = try await CLIProcess.run(["todo", "add", "task \(i)", "--priority", "\(i % 4)", "--store", "sqlite:./a.sqlite"], in: scratch.url)
        }
        let copied = try await CLIProcess.run(["copy", "sqlite:./a.sqlite", "lmdb:./b.lmdb", "--batch", "7"], in: scratch.url)
        #expect(copied.status == 0, "\(copied.errors)")
        #expect(copied.output.contains("todos: 25 records copied (25 new, 0 replaced)"), "\(copied.output)")
        let again = try await CLIProcess.run(["copy", "sqlite:./a.sqlite", "lmdb:./b.lmdb"], in: scratch.url)
        #expect(again.output.contains("(0 new, 25 replaced)"), "\(again.output)")
        let back = try await CLIProcess.run(["copy", "lmdb:./b.lmdb", "sqlite:./c.sqlite"], in: scratch.url)
        #expect(back.status == 0, "\(back.errors)")
        let source = try await CLIProcess.run(["todo", "list", "--json", "--store", "sqlite:./a.sqlite"], in: scratch.url)
        let destination = try await CLIProcess.run(["todo", "list", "--json", "--store", "lmdb:./b.lmdb"], in: scratch.url)
        let roundTrip = try await CLIProcess.run(["todo", "list", "--json", "--store", "sqlite:./c.sqlite"], in: scratch.url)
        #expect(source.output == destination.output && source.output == roundTrip.output)
    }

    @Test("copy to a PostgreSQL store and back, and the commands on it")
    func copyThroughPostgres() async throws {
        guard let (postgres, _) = postgresStore("cli_") else { return }
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        for i in 0..<12 {
            _ = try await CLIProcess.run(["todo", "add", "task \(i)", "--priority", "\(i % 4)", "--store", "sqlite:./a.sqlite"], in: scratch.url)
        }
        let there = try await CLIProcess.run(["copy", "sqlite:./a.sqlite", postgres], in: scratch.url)
        #expect(there.status == 0, "\(there.errors)")
        #expect(there.output.contains("todos: 12 records copied (12 new, 0 replaced)"), "\(there.output)")
        let added = try await CLIProcess.run(["todo", "add", "on the server", "--store", postgres], in: scratch.url)
        #expect(added.status == 0, "\(added.errors)")
        let back = try await CLIProcess.run(["copy", postgres, "sqlite:./b.sqlite"], in: scratch.url)
        #expect(back.status == 0, "\(back.errors)")
        let onServer = try await CLIProcess.run(["todo", "list", "--json", "--store", postgres], in: scratch.url)
        let roundTrip = try await CLIProcess.run(["todo", "list", "--json", "--store", "sqlite:./b.sqlite"], in: scratch.url)
        #expect(onServer.output == roundTrip.output && onServer.output.contains("on the server"))
        let info = try await CLIProcess.run(["info", "--store", postgres], in: scratch.url)
        #expect(info.output.contains("todos: 13 records"), "\(info.output)")
    }

    @Test("watch on postgres:// shows rows written with psql and by another reservoir process")
    func watchPostgres() async throws {
        guard let (postgres, schema) = postgresStore("cliwatch_"), let server = ProcessInfo.processInfo.environment["RESERVOIR_TEST_POSTGRES"] else { return }
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let store = ["--store", postgres]
        defer { try? PSQL.run("DROP SCHEMA IF EXISTS \(schema) CASCADE", on: server) }
        _ = try await CLIProcess.run(["todo", "add", "Buy milk", "--priority", "2"] + store, in: scratch.url)
        let watch = try CLIProcess(["watch", "--json", "--count", "3"] + store, in: scratch.url)
        try await watch.waitForLines(1)
        try PSQL.run("UPDATE \(schema).todos SET priority = 9 WHERE title = 'Buy milk'", on: server)
        try await watch.waitForLines(2)
        _ = try await CLIProcess.run(["todo", "add", "File taxes", "--priority", "3"] + store, in: scratch.url)
        #expect(try await watch.waitForExit(seconds: 15) == 0, "watch exits after --count changes: \(watch.errors)")
        let changes = watch.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(changes.map { $0["count"] as? Int } == [1, 1, 2], "list sizes: \(watch.output)")
        let priorities = changes.compactMap { ($0["inserted"] as? [[String: Any]])?.first?["todo"] as? [String: Any] }.map { $0["priority"] as? Int }
        #expect(priorities == [2, 9, 3], "inserted priorities (the psql update shows as 9): \(watch.output)")
    }

    @Test("demo runs the script on every backend and finds the streams identical")
    func demo() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let result = try await CLIProcess.run(["demo"], in: scratch.url)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("were identical"), "\(result.output)")
        #expect(result.output.contains("rows kept by applyingChanges equal a fresh fetch"))
        #expect(!result.output.contains("DIFFER"))
    }

    @Test("bench measures a store and prints a table")
    func bench() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let result = try await CLIProcess.run(["bench", "--store", "sqlite:./bench.sqlite", "--records", "300"], in: scratch.url)
        #expect(result.status == 0, "\(result.errors)")
        for operation in ["bulk insert", "fetch all", "point reads", "single-record commits", "live fetch"] {
            #expect(result.output.contains(operation), "\(operation) in \(result.output)")
        }
    }

    @Test("every command explains itself with an example", arguments: [
        ["--help"], ["demo", "--help"], ["todo", "--help"], ["todo", "add", "--help"], ["todo", "done", "--help"],
        ["todo", "rm", "--help"], ["todo", "list", "--help"], ["watch", "--help"], ["history", "--help"], ["sync", "--help"], ["copy", "--help"], ["info", "--help"], ["migrate", "--help"], ["bench", "--help"],
    ])
    func help(_ arguments: [String]) async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let result = try await CLIProcess.run(arguments, in: scratch.url)
        #expect(result.status == 0)
        #expect(result.output.contains("Example: reservoir"), "\(arguments): \(result.output)")
    }

    /// A store in a fresh schema (named `prefix` and a random suffix) on the test server, and
    /// the schema; nil, with an issue recorded, when the tests run without a server.
    private func postgresStore(_ prefix: String) -> (configuration: String, schema: String)? {
        guard let server = ProcessInfo.processInfo.environment["RESERVOIR_TEST_POSTGRES"], !server.isEmpty else {
            Issue.record("RESERVOIR_TEST_POSTGRES is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL server")
            return nil
        }
        let schema = prefix + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        return (server + (server.contains("?") ? "&" : "?") + "schema=\(schema)", schema)
    }

}
