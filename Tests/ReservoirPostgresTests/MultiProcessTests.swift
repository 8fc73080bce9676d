import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import ReservoirTestRecords
import Testing

/// Several app processes share one server, as app servers on several machines would: each
/// a separate client over TCP with live subscriptions, writing at the same time.
@Suite("PostgreSQL: several processes")
struct MultiProcessTests {
    @Test func concurrentClientsAgreeAndEveryCommitIsPresentOnce() async throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let clients = 3
        let writes = 40
        let executable = try ChildProcess.builtExecutable("ReservoirPostgresTestHelper")
        // Started together, so they also race to create the store's tables.
        let processes = try (0..<clients).map { client in
            try ChildProcess(executable, [configuration, String(client + 1), String(writes), String(clients * writes)])
        }
        for (index, process) in processes.enumerated() {
            let status = await process.waitForExit(within: 120)
            #expect(status == 0, "client \(index + 1) exited with \(status.map(String.init) ?? "no status (still running)"): \(process.output.joined(separator: "\n"))")
            #expect(process.output.contains { $0.hasPrefix("ok ") }, "client \(index + 1): \(process.output)")
        }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        #expect(try store.count(FetchRequest<Message>()) == clients * writes)
        for client in 1...clients {
            #expect(try store.count(FetchRequest<Message>(where: \.author == client)) == writes)
        }
        // Every commit is in the log exactly once, numbered 1…n in commit order.
        let log = try store.backend.read { try $0.changeLog(after: 0, limit: 10_000) }
        #expect(Set(log.map(\.sequence)) == Set(1...UInt64(clients * writes)))
        #expect(log.count == clients * writes)
        #expect(log.map(\.sequence) == log.map(\.sequence).sorted())
    }
}
