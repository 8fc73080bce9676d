import Foundation
import Reservoir

/// Sync clients killed at random moments (Backends.md, "Sync"): child processes, each with a
/// local store of its own, write records and sync with one remote store, and are SIGKILLed at
/// random points: mid-write, mid-push, mid-pull; the test process meanwhile edits records on
/// the remote, as another client would. Each restarted client goes on from what its local store
/// holds.
///
/// A client only inserts records of its own (ids `client × 1,000,000 + n`) and never changes
/// them again; the test only edits records already on the remote. So at the end, after every
/// client has synced until nothing moves:
/// - every record a client reported written (committed locally) is on the remote;
/// - every edit the test made is still there: a batch sent again after a kill and applied a
///   second time would have put the client's older row back over it;
/// - every client's local store holds exactly the remote's records.
///
/// The child is an executable that calls ``SyncClientKill/childMain(registry:)`` when its first
/// argument is ``childArgument``, with a registry that opens the local and remote stores.
public struct SyncClientKill: Sendable {
    public let child: URL
    public let registry: BackendRegistry

    public static let childArgument = "--sync-client"

    public init(child: URL, registry: BackendRegistry) {
        self.child = child
        self.registry = registry
    }

    static let entity = EntityDescription(name: "sync_kill_notes", idColumn: "id", fields: ["id", "body"], indexes: [])

    public struct Report: Sendable, CustomStringConvertible {
        public var trials = 0
        public var kills = 0
        /// Records the clients reported committed locally, all found on the remote at the end.
        public var recordsWritten = 0
        /// Edits the test made on the remote, all found intact at the end.
        public var serverEdits = 0
        /// Rounds the clients reported finished before they were killed.
        public var rounds = 0
        /// The test's own server reads and edits that failed while the server was down.
        public var editsLostToOutages = 0
        public var description: String {
            "\(trials) trials, \(kills) clients killed, \(rounds) rounds finished, \(recordsWritten) records written by clients, "
                + "\(serverEdits) edits on the server (\(editsLostToOutages) failed during outages), all on the server and every client equal to it at the end"
        }
    }

    /// Runs `trials` rounds of clients on the local stores `locals` (one client each, their
    /// configuration strings) against `remote` (the clients' configuration string for it; the
    /// test writes through `direct`, the same store).
    /// `disturb` runs at the start of each trial with a random number: to cut the network the
    /// clients reach the remote through, or to crash and restart the server, say (then pass
    /// `serverOutages`: the test's own edits that fail meanwhile are left out of the checks, and
    /// `disturb(0)`, before the last rounds, must leave the server up).
    public func run(remote: String, direct: String, locals: [String], trials: Int, seed: UInt64, serverOutages: Bool = false,
                    disturb: @escaping @Sendable (UInt64) -> Void = { _ in }) async throws -> Report {
        try await onOwnThread {
            Result { try runTrials(remote: remote, direct: direct, locals: locals, trials: trials, seed: seed, outages: serverOutages, disturb: disturb) }
        }.get()
    }

    private func runTrials(remote: String, direct: String, locals: [String], trials: Int, seed: UInt64, outages: Bool,
                           disturb: (UInt64) -> Void) throws -> Report {
        var g = SeededGenerator(seed: seed)
        var report = Report()
        let server = try Store.open(direct, registry: registry)
        defer { server.close() }
        var written: Set<Int64> = []
        var edits: [Int64: String] = [:]
        func collect(_ process: ChildProcess, _ what: String) throws {
            for line in process.output {
                if line.hasPrefix("wrote "), let id = Int64(line.dropFirst(6)) { written.insert(id) }
                if line == "synced" { report.rounds += 1 }
                if line.hasPrefix("error ") {
                    throw ConformanceFailure(message: "\(what): the client failed: \(line)\n\(process.errorText)", file: #fileID, line: #line)
                }
            }
        }
        for trial in 0..<trials {
            disturb(g.next())
            let clients = try locals.enumerated().map { index, local in
                try ChildProcess(child, [Self.childArgument, remote, local, String(index + 1), "work", String(g.next())])
            }
            if trial == trials - 1 && report.rounds == 0 {
                // No client has finished a round yet (a loaded machine starts and syncs slowly):
                // the last trial waits for one, so the run always edits records clients pushed
                // and kills clients that sync.
                let patience = Date().addingTimeInterval(60)
                while Date() < patience && !clients.contains(where: { $0.output.contains("synced") }) { usleep(20_000) }
            }
            // The test edits records already on the remote while the clients run.
            let until = Date().addingTimeInterval(0.05 + Double(g.next() % 400) / 1000)
            var edit = 0
            while Date() < until {
                do {
                    let onServer = try server.read { try $0.rows(try Query(entity: Self.entity)) }.compactMap { row -> Int64? in
                        if case let .integer(id)? = row["id"] { return id } else { return nil }
                    }
                    if let id = onServer.randomElement(using: &g) {
                        let body = "server edit \(trial).\(edit)"
                        edit += 1
                        do {
                            try server.write { tx in try tx.putRow(Row(columns: ["id", "body"], values: [.integer(id), .text(body)]), in: Self.entity) }
                            edits[id] = body
                        } catch is ReservoirError where outages {
                            // Down: whether it committed is unknown, so the record's edits are
                            // no longer checked (a later edit of it may be again).
                            edits[id] = nil
                            report.editsLostToOutages += 1
                        }
                    }
                } catch is ReservoirError where outages {
                    report.editsLostToOutages += 1
                }
                usleep(UInt32(1000 + g.next() % 20_000))
            }
            for client in clients {
                if g.next() % 2 == 0 { usleep(UInt32(g.next() % 5000)) }
                client.kill9()
                report.kills += 1
            }
            for client in clients {
                _ = client.waitUntilExit(within: 30)
                try collect(client, "trial \(trial)")
            }
            report.trials += 1
        }
        // Every client syncs until nothing moves, then the checks.
        disturb(0)
        for (index, local) in locals.enumerated() {
            let drain = try ChildProcess(child, [Self.childArgument, remote, local, String(index + 1), "drain", "0"])
            let status = drain.waitUntilExit(within: 120)
            try collect(drain, "the last round of client \(index + 1)")
            try expectEqual(status, 0, "client \(index + 1)'s last round's exit status (nil: not done in 120 s): \(drain.outputText) \(drain.errorText)")
        }
        // Another round each: a client that drained first has what the later ones pushed.
        for (index, local) in locals.enumerated() {
            let drain = try ChildProcess(child, [Self.childArgument, remote, local, String(index + 1), "drain", "0"])
            let status = drain.waitUntilExit(within: 120)
            try collect(drain, "the second last round of client \(index + 1)")
            try expectEqual(status, 0, "client \(index + 1)'s second last round's exit status: \(drain.outputText) \(drain.errorText)")
        }
        let rows = try Self.rows(server)
        for id in written where rows[id] == nil {
            throw ConformanceFailure(message: "record \(id) was written by a client but is not on the remote", file: #fileID, line: #line)
        }
        for (id, body) in edits where rows[id] != body {
            throw ConformanceFailure(message: "the server edit of record \(id) (\"\(body)\") was overwritten with \(rows[id].map { "\"\($0)\"" } ?? "a delete"): a batch applied twice?",
                                     file: #fileID, line: #line)
        }
        for local in locals {
            let store = try Store.open(local, registry: registry)
            defer { store.close() }
            let held = try Self.rows(store)
            if held != rows {
                throw ConformanceFailure(message: "the client store \(local) holds \(held.count) records, not the remote's \(rows.count) (or other values)", file: #fileID, line: #line)
            }
        }
        report.recordsWritten = written.count
        report.serverEdits = edits.count
        return report
    }

    static func rows(_ store: Store) throws -> [Int64: String] {
        try store.read { snapshot in
            guard try snapshot.entities().contains(where: { $0.name == entity.name }) else { return [:] }
            var rows: [Int64: String] = [:]
            for row in try snapshot.rows(try Query(entity: entity)) {
                if case let .integer(id)? = row["id"], case let .text(body)? = row["body"] { rows[id] = body }
            }
            return rows
        }
    }

    // MARK: - The client process

    /// The client: `CHILD --sync-client REMOTE LOCAL CLIENT work|drain SEED`. `work` writes
    /// records and runs rounds until killed, printing `wrote ID` after each local commit and
    /// `synced` after each round (a failed round, the network gone, is tried again); `drain`
    /// runs rounds until one sends and brings nothing, then exits 0.
    public static func childMain(registry: BackendRegistry) -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count == 6, arguments[0] == childArgument, let client = Int64(arguments[3]), let seed = UInt64(arguments[5]) else {
            fail("usage: CHILD \(childArgument) REMOTE LOCAL CLIENT work|drain SEED")
        }
        do {
            let local = try Store.open(arguments[2], registry: registry)
            let sync = try Sync(local: local, remote: arguments[1], registry: registry)
            if arguments[4] == "drain" {
                for _ in 0..<50 {
                    guard let events = try? sync.sync() else {
                        usleep(100_000)
                        continue
                    }
                    let moved = events.contains { event in
                        switch event {
                        case let .pushed(changes, rejected, _): changes > 0 || !rejected.isEmpty
                        case let .pulled(changeSets, _, _): changeSets > 0
                        case .resynced: true
                        default: false
                        }
                    }
                    if !moved && sync.status.pendingChanges == 0 {
                        local.close()
                        exit(0)
                    }
                }
                fail("still moving after 50 rounds: \(sync.status)")
            }
            var g = SeededGenerator(seed: seed)
            let base = client * 1_000_000
            var next = (try SyncClientKill.rows(local).keys.filter { $0 / 1_000_000 == client }.max()).map { $0 + 1 } ?? base
            while true {
                for _ in 0..<(1 + g.next() % 4) {
                    let id = next
                    try local.write { tx in
                        try tx.putRow(Row(columns: ["id", "body"], values: [.integer(id), .text("client \(client) record \(id)")]), in: entity)
                    }
                    say("wrote \(id)")
                    next += 1
                }
                if (try? sync.sync()) != nil { say("synced") }
                usleep(UInt32(g.next() % 3000))
            }
        } catch {
            fail("\(error)")
        }
    }

    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private static func fail(_ message: String) -> Never {
        say("error \(message.replacingOccurrences(of: "\n", with: " "))")
        exit(2)
    }
}
