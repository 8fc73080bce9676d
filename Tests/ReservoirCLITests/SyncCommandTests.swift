import Foundation
import ReservoirConformance
import Testing

@Suite("reservoir sync")
struct SyncCommandTests {
    @Test("sync mirrors a remote store into a local one, once and following, and sends the local store's own to-dos back")
    func mirrorOnceThenFollow() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let remote = ["--store", "lmdb:./remote.lmdb"]
        let stores = ["--local", "sqlite:./replica.sqlite", "--remote", "lmdb:./remote.lmdb"]
        _ = try await CLIProcess.run(["todo", "add", "Buy milk"] + remote, in: scratch.url)
        let first = try await CLIProcess.run(["sync"] + stores, in: scratch.url)
        #expect(first.status == 0 && first.output.contains("firstSync") && first.output.contains("1 record"), "\(first.output) \(first.errors)")

        let follow = try CLIProcess(["sync", "--follow", "--shape", "todos"] + stores, in: scratch.url)
        try await follow.waitForLines(1)   // the changed shapes re-read whole
        _ = try await CLIProcess.run(["todo", "add", "File taxes"] + remote, in: scratch.url)
        try await follow.waitForLines(2)
        follow.interrupt()
        #expect(try await follow.waitForExit(seconds: 30) == 0, "sync --follow ends on Ctrl-C: \(follow.errors)")
        #expect(follow.lines.first?.contains("shapesChanged") == true && follow.lines.last?.contains("pulled 1 change set") == true, "\(follow.output)")
        let list = try await CLIProcess.run(["todo", "list", "--store", "sqlite:./replica.sqlite"], in: scratch.url)
        #expect(list.output.contains("Buy milk") && list.output.contains("File taxes"), "the replica lists both: \(list.output)")

        // Written to the replica while no sync runs, then sent by the next one.
        _ = try await CLIProcess.run(["todo", "add", "Call the bank", "--store", "sqlite:./replica.sqlite"], in: scratch.url)
        let push = try await CLIProcess.run(["sync", "--once"] + stores, in: scratch.url)
        #expect(push.status == 0 && push.output.contains("pushed 1 change"), "\(push.output) \(push.errors)")
        let remoteList = try await CLIProcess.run(["todo", "list"] + remote, in: scratch.url)
        #expect(remoteList.output.contains("Call the bank") && remoteList.output.contains("File taxes"), "the remote lists the replica's to-do: \(remoteList.output)")

        let bad = try await CLIProcess.run(["sync", "--local", "sqlite:./replica.sqlite", "--remote", "lmdb:./no/such.lmdb"], in: scratch.url)
        #expect(bad.status != 0 && bad.errors.split(separator: "\n").count == 1 && bad.errors.contains("no/such"), "\(bad.errors)")
    }

    @Test("the to-do list offline: added while the server is away, then one sync converges, and a second device following sees it live")
    func offlineTodoWithPostgres() async throws {
        guard let server = ProcessInfo.processInfo.environment["RESERVOIR_TEST_POSTGRES"], !server.isEmpty else {
            Issue.record("RESERVOIR_TEST_POSTGRES is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL server")
            return
        }
        let schema = "cli_sync_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        defer { try? PSQL.run("DROP SCHEMA IF EXISTS \(schema) CASCADE", on: server) }
        let remote = server + (server.contains("?") ? "&" : "?") + "schema=\(schema)"
        // The same store with nothing listening at its port: the server as a device sees it when away.
        var away = try #require(URLComponents(string: remote))
        away.port = 1
        let awayURL = try #require(away.string)
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let phone = ["--local", "sqlite:./phone.sqlite", "--remote", remote]

        _ = try await CLIProcess.run(["todo", "add", "Buy milk", "--store", "sqlite:./phone.sqlite"], in: scratch.url)
        let first = try await CLIProcess.run(["sync", "--once"] + phone, in: scratch.url)
        #expect(first.status == 0 && first.output.contains("pushed 1 change"), "\(first.output) \(first.errors)")

        // The laptop follows the server, and watches its own local store.
        let laptopSync = try CLIProcess(["sync", "--follow", "--local", "lmdb:./laptop.lmdb", "--remote", remote], in: scratch.url)
        try await laptopSync.waitForLines(1)
        let watch = try CLIProcess(["watch", "--json", "--count", "2", "--store", "lmdb:./laptop.lmdb"], in: scratch.url)
        try await watch.waitForLines(1)

        // Offline: written locally, and a sync that cannot reach the server says so and keeps it.
        _ = try await CLIProcess.run(["todo", "add", "Water the plants", "--store", "sqlite:./phone.sqlite"], in: scratch.url)
        let offline = try await CLIProcess.run(["sync", "--once", "--local", "sqlite:./phone.sqlite", "--remote", awayURL], in: scratch.url)
        #expect(offline.status != 0 && offline.errors.split(separator: "\n").count == 1, "\(offline.output) \(offline.errors)")
        let list = try await CLIProcess.run(["todo", "list", "--store", "sqlite:./phone.sqlite"], in: scratch.url)
        #expect(list.output.contains("Water the plants"), "the to-do stays on the phone: \(list.output)")
        // Following while the server is away: it says so and keeps trying, until Ctrl-C.
        let waiting = try CLIProcess(["sync", "--follow", "--local", "sqlite:./phone.sqlite", "--remote", awayURL], in: scratch.url)
        try await waiting.waitForLines(2)
        #expect(waiting.lines.prefix(2).allSatisfy { $0.hasPrefix("failed:") }, "\(waiting.output) \(waiting.errors)")
        waiting.interrupt()
        #expect(try await waiting.waitForExit(seconds: 30) == 0, "\(waiting.errors)")

        // Back online: one sync, and the laptop's watch shows it.
        let back = try await CLIProcess.run(["sync", "--once"] + phone, in: scratch.url)
        #expect(back.status == 0 && back.output.contains("pushed 1 change"), "\(back.output) \(back.errors)")
        #expect(try await watch.waitForExit(seconds: 30) == 0, "the laptop's watch saw the to-do arrive: \(watch.output) \(watch.errors)")
        #expect(watch.lines.last?.contains("Water the plants") == true, "\(watch.output)")
        laptopSync.interrupt()
        #expect(try await laptopSync.waitForExit(seconds: 30) == 0, "\(laptopSync.errors)")
        let remoteList = try await CLIProcess.run(["todo", "list", "--store", remote], in: scratch.url)
        #expect(remoteList.output.contains("Buy milk") && remoteList.output.contains("Water the plants"), "\(remoteList.output)")
    }
}
