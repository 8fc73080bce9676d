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
}
