import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import ReservoirTestRecords
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The PostgreSQL fault loop (issue #30): several client processes write and watch one store
/// while the test crashes the server (`pg_ctl -m immediate`), freezes its processes (SIGSTOP,
/// then SIGCONT), terminates their connections, cuts connections at `COMMIT` and makes the
/// server unreachable, in an order drawn from a seed. At the end every acknowledged commit is
/// present exactly once, every client's live subscription equals a fresh fetch, and no call
/// took longer than its documented bound (Backends.md § PostgreSQL, faults).
///
/// The server is a cluster of the test's own (`PostgresCluster`), at PostgreSQL's default
/// durability (fsync, synchronous commit), since the shared test server runs without either
/// and must not be crashed under the other tests. The clients are `ReservoirPostgresTestHelper
/// --fault-loop` (its `FaultLoopClient.swift` says what each logs and how it treats an unknown
/// outcome) and reach the server through a `TCPCutter`.
///
/// `RESERVOIR_PG_FAULTS` sets the faults of a run (16 by default; `scripts/test-deep` raises
/// it), `RESERVOIR_FUZZ_SEED` the seed (printed with every failure).
@Suite("PostgreSQL: the fault loop")
struct PostgresFaultLoopTests {
    static let environment = ProcessInfo.processInfo.environment
    static let faults = environment["RESERVOIR_PG_FAULTS"].flatMap { Int($0) }.map { max(1, $0) } ?? 16
    static let seed: UInt64 = environment["RESERVOIR_FUZZ_SEED"].flatMap { text in
        text.lowercased().hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    } ?? 0x5EED_0030
    static let clients = 3
    /// The store's `timeout=` and `connect_timeout=`: short, so that faults outlast them.
    static let timeout = 2
    static let connectTimeout = 2
    /// The longest a client's `write`, `count` or `commitOutcome` may take. Each server call
    /// is bounded by `timeout`, each connection by `connect_timeout`; a one-record write is at
    /// most six calls (a new writer's settings, BEGIN with the meta row, both again after a
    /// reconnect, COMMIT or ROLLBACK, and resolving a lost COMMIT, `timeout` in all) and three
    /// connections (a new writer, a reconnect, the last question about a lost COMMIT). Plus
    /// 10 s for a machine loaded by other builds.
    static let bound = Double(6 * timeout + 3 * connectTimeout + 10)

    enum Fault: CustomStringConvertible {
        /// `pg_ctl stop -m immediate` (every server process quits at once, no checkpoint),
        /// down this long, then started again (crash recovery).
        case crash(down: Double)
        /// SIGSTOP of this many client connections' server processes, SIGCONT after this long.
        case freeze(backends: Int, seconds: Double)
        /// SIGSTOP of the postmaster: new connections hang, running ones go on.
        case freezePostmaster(seconds: Double)
        /// `pg_terminate_backend` of this many client connections.
        case terminate(backends: Int)
        /// The proxy cuts the next connection that sends a write's `COMMIT`.
        case cutCommit(TCPCutter.Cut)
        /// The proxy refuses new connections this long, after one connection is terminated.
        case unreachable(seconds: Double)

        var description: String {
            switch self {
            case let .crash(down): "crash, down \(String(format: "%.1f", down)) s"
            case let .freeze(backends, seconds): "freeze \(backends) server processes \(String(format: "%.1f", seconds)) s"
            case let .freezePostmaster(seconds): "freeze the postmaster \(String(format: "%.1f", seconds)) s"
            case let .terminate(backends): "terminate \(backends) connections"
            case let .cutCommit(cut): "cut at COMMIT (\(cut == .afterCommitSent ? "after it is sent" : "before it is sent"))"
            case let .unreachable(seconds): "unreachable \(String(format: "%.1f", seconds)) s"
            }
        }

        var kind: String {
            switch self {
            case .crash: "crashes"
            case .freeze: "frozen server processes"
            case .freezePostmaster: "frozen postmasters"
            case .terminate: "terminations"
            case .cutCommit: "cuts at COMMIT"
            case .unreachable: "unreachable spells"
            }
        }

        static func random(using g: inout SeededGenerator) -> Fault {
            func seconds(_ range: ClosedRange<Double>) -> Double { Double.random(in: range, using: &g) }
            switch Int.random(in: 0..<11, using: &g) {
            case 0, 1: return .crash(down: seconds(0...2))
            case 2, 3, 4: return .freeze(backends: Int.random(in: 1...2, using: &g), seconds: seconds(0.3...5))
            case 5: return .freezePostmaster(seconds: seconds(0.5...4))
            case 6, 7: return .terminate(backends: Int.random(in: 1...3, using: &g))
            case 8, 9: return .cutCommit(Bool.random(using: &g) ? .afterCommitSent : .beforeCommitSent)
            default: return .unreachable(seconds: seconds(0.5...4))
            }
        }
    }

    @Test("crashes, frozen server processes and cut connections under writing, watching clients: every acknowledged commit once, subscriptions equal a fetch, every call bounded")
    func faultLoop() async throws {
        let seed = Self.seed
        let context = "seed 0x\(String(seed, radix: 16)) (RESERVOIR_FUZZ_SEED), \(Self.faults) faults"
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let cutter = try TCPCutter(upstreamPort: cluster.port)
        defer { cutter.stop() }
        var proxied = try #require(URLComponents(string: cluster.url))
        proxied.port = Int(cutter.port)
        let schema = "schema=loop&retention=0"
        let configuration = try #require(proxied.string) + "?\(schema)&timeout=\(Self.timeout)&connect_timeout=\(Self.connectTimeout)"
        let direct = cluster.url + "?\(schema)"
        // The store exists, and holds a record, before the clients subscribe.
        do {
            let store = try Store.open(direct, registry: TestServer.registry)
            defer { store.close() }
            try await store.write { try $0.insert(Message(id: 0, author: 0, body: "seed")) }
        }

        let executable = try ChildProcess.builtExecutable("ReservoirPostgresTestHelper")
        let clients = try (1...Self.clients).map { client in
            try ChildProcess(executable, ["--fault-loop", configuration, String(client), cluster.directory.path, String(Self.bound)])
        }
        defer { for client in clients where client.isRunning { client.kill9() } }
        for (index, client) in clients.enumerated() {
            let line = await client.waitForLine(within: 120) { $0.hasPrefix("ready ") || $0.hasPrefix("FAIL") }
            try #require(line?.hasPrefix("ready ") == true, "\(context): client \(index + 1) not ready: \(client.output.suffix(5))")
        }

        // The faults, one at a time, each undone before the next.
        var g = SeededGenerator(seed: seed)
        var injected: [String: Int] = [:]
        var log: [String] = []
        let started = ContinuousClock.now
        for number in 0..<Self.faults {
            let fault = Fault.random(using: &g)
            let pause = Double.random(in: 0.2...1.0, using: &g)
            log.append("\(Date()) fault \(number + 1): \(fault)")
            do {
                try await inject(fault, cluster: cluster, cutter: cutter, using: &g)
            } catch {
                Issue.record("\(context): fault \(number + 1) (\(fault)) could not be made: \(error)")
                return
            }
            injected[fault.kind, default: 0] += 1
            if let ended = clients.firstIndex(where: { !$0.isRunning }) {
                Issue.record("\(context): client \(ended + 1) ended during fault \(number + 1) (\(fault)): \(clients[ended].output.suffix(5))")
                return
            }
            try await Task.sleep(for: .seconds(pause))
        }
        let faultTime = ContinuousClock.now - started

        // Quiet: the clients finish their records, then compare their subscriptions with a fetch.
        try #require(FileManager.default.createFile(atPath: cluster.directory.file("stop"), contents: nil))
        for (index, client) in clients.enumerated() {
            let line = await client.waitForLine(within: 600) { $0.hasPrefix("stopped") || $0.hasPrefix("FAIL") }
            try #require(line?.hasPrefix("stopped") == true, "\(context): client \(index + 1) did not stop: \(client.output.suffix(5))")
        }
        try #require(FileManager.default.createFile(atPath: cluster.directory.file("check"), contents: nil))
        var logs: [ClientLog] = []
        for (index, client) in clients.enumerated() {
            let status = await client.waitForExit(within: 300)
            #expect(status == 0, "\(context): client \(index + 1) exited with \(status.map(String.init) ?? "none: killed after 300 s"): \(client.output.suffix(3))")
            logs.append(ClientLog(client.output))
        }

        // A fresh fetch and the change log, on a connection of the test's own.
        let store = try Store.open(direct, registry: TestServer.registry)
        defer { store.close() }
        let fetched = try store.fetch(FetchRequest<Message>(where: \.author != 0, sortBy: [.ascending(\.id)]))
        let all = try store.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))
        let inserts = try store.backend.read { try $0.changeLog(after: 0, limit: 10_000_000) }
            .filter { $0.entity == Message.schema.name && $0.kind == .inserted }
        var insertCount: [Value: Int] = [:]
        for entry in inserts { insertCount[entry.id, default: 0] += 1 }

        var problems: [String] = []
        var acknowledged: [Int: Int] = [:]
        for (index, log) in logs.enumerated() {
            for (id, times) in log.acknowledgedTimes where times > 1 {
                problems.append("client \(index + 1) had record \(id) acknowledged \(times) times")
            }
            acknowledged.merge(log.acknowledged) { first, _ in first }
            if !log.slow.isEmpty { problems.append("client \(index + 1): calls past the \(Self.bound) s bound: \(log.slow)") }
            if let final = log.final, final.count != all.count || final.digest != Message.digest(all) {
                problems.append("client \(index + 1)'s live subscription (\(final.count) records, digest \(final.digest)) is not the fetch (\(all.count), \(Message.digest(all)))")
            }
            if !log.failures.isEmpty { problems.append("client \(index + 1): \(log.failures)") }
        }
        // Every acknowledged commit is there, as its acknowledged attempt wrote it, once.
        let present = Dictionary(fetched.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let missing = acknowledged.keys.filter { present[$0] == nil }.sorted()
        let unacknowledged = present.keys.filter { acknowledged[$0] == nil }.sorted()
        func said(_ ids: [Int]) -> [[String]] { ids.prefix(5).map { id in clients[id / 1_000_000 - 1].output.filter { $0.contains(" \(id) ") } } }
        if !missing.isEmpty { problems.append("acknowledged commits missing: \(missing.prefix(20)); what their clients said of them: \(said(missing))") }
        if !unacknowledged.isEmpty { problems.append("records no client had acknowledged: \(unacknowledged.prefix(20)); what their clients said of them: \(said(unacknowledged))") }
        for (id, attempt) in acknowledged.sorted(by: { $0.key < $1.key }) {
            guard let message = present[id] else { continue }
            let expected = "client \(id / 1_000_000) record \(id % 1_000_000) attempt \(attempt)"
            if message.body != expected { problems.append("record \(id) is \"\(message.body)\", acknowledged as \"\(expected)\"") }
        }
        let notOnce = fetched.filter { insertCount[.integer(Int64($0.id))] != 1 }.map { "\($0.id): \(insertCount[.integer(Int64($0.id))] ?? 0)" }
        if !notOnce.isEmpty { problems.append("records logged as inserted other than once: \(notOnce.prefix(20))") }
        if !problems.isEmpty {
            let kept = keep(clients, cluster: cluster, faults: log)
            for problem in problems { Issue.record("\(context): \(problem) (logs kept in \(kept))") }
        }

        let total = logs.reduce(into: ClientLog([])) { $0.add($1) }
        print("""
            PostgreSQL fault loop, \(context), \(Self.clients) clients: \(injected.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")) \
            in \(faultTime); \(acknowledged.count) commits acknowledged (\(total.resolvedCommitted) of them after .commitOutcomeUnknown), \
            \(total.unknown) unknown outcomes (\(total.resolvedAborted) rolled back), failed attempts \(total.failed.sorted { $0.key < $1.key }), \
            \(total.resubscriptions) live subscriptions ended by a fault and made again \(Array(Set(total.endings)).sorted().prefix(3)); longest calls \(logs.compactMap { $0.final?.longest })
            """)
    }

    /// Copies what the clients printed, the faults made and the server's log to a directory
    /// that stays, and returns its path.
    func keep(_ clients: [ChildProcess], cluster: PostgresCluster, faults: [String]) -> String {
        let kept = FileManager.default.temporaryDirectory.appendingPathComponent("reservoir-faultloop-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: kept, withIntermediateDirectories: true)
        for (index, client) in clients.enumerated() {
            try? client.outputText.write(to: kept.appendingPathComponent("client-\(index + 1).log"), atomically: true, encoding: .utf8)
        }
        try? faults.joined(separator: "\n").write(to: kept.appendingPathComponent("faults.log"), atomically: true, encoding: .utf8)
        try? FileManager.default.copyItem(atPath: cluster.directory.file("server.log"), toPath: kept.appendingPathComponent("server.log").path)
        return kept.path
    }

    /// Makes `fault` and undoes it (every stopped process continued, the server running,
    /// the proxy passing everything) before returning, also when it throws.
    func inject(_ fault: Fault, cluster: PostgresCluster, cutter: TCPCutter, using g: inout SeededGenerator) async throws {
        /// The clients' server processes, those in a transaction or a statement first (mostly
        /// writers: the clients commit all the time), then idle ones.
        func backends() throws -> [Int32] {
            try PostgresFaultTests.query("""
                SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity
                WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY state = 'idle' ORDER BY state = 'idle'
                """, on: cluster.url).flatMap { $0.split(separator: " ").compactMap { Int32($0) } }
        }
        func pick(_ count: Int, of pids: [Int32], using g: inout SeededGenerator) -> [Int32] {
            // Mostly among the busy ones (the first of the list), sometimes any.
            let pool = Bool.random(using: &g) ? Array(pids.prefix(max(count, 2))) : pids
            return Array(pool.shuffled(using: &g).prefix(count))
        }
        switch fault {
        case let .crash(down):
            try cluster.stop("immediate")
            try await Task.sleep(for: .seconds(down))
            try cluster.start()
        case let .freeze(count, seconds):
            let pids = pick(count, of: try backends(), using: &g)
            try await frozen(pids, for: seconds)
        case let .freezePostmaster(seconds):
            let pid = try #require(cluster.postmasterPID, "no postmaster.pid")
            try await frozen([pid], for: seconds)
        case let .terminate(count):
            for pid in pick(count, of: try backends(), using: &g) {
                _ = try PostgresFaultTests.query("SELECT pg_terminate_backend(\(pid))", on: cluster.url)
            }
        case let .cutCommit(cut):
            let before = cutter.cutCount
            cutter.arm(cut)
            defer { cutter.disarm() }
            // Until a client commits through it; they commit many times a second.
            _ = await eventually(timeout: .seconds(10)) { cutter.cutCount > before }
        case let .unreachable(seconds):
            cutter.refuseNewConnections(true)
            defer { cutter.refuseNewConnections(false) }
            if let pid = pick(1, of: try backends(), using: &g).first {
                _ = try PostgresFaultTests.query("SELECT pg_terminate_backend(\(pid))", on: cluster.url)
            }
            try await Task.sleep(for: .seconds(seconds))
        }
    }

    /// SIGSTOP of `pids`, SIGCONT after `seconds` (also when the wait is cancelled).
    func frozen(_ pids: [Int32], for seconds: Double) async throws {
        var stopped: [Int32] = []
        defer { for pid in stopped { kill(pid, SIGCONT) } }
        for pid in pids where kill(pid, SIGSTOP) == 0 { stopped.append(pid) }
        try await Task.sleep(for: .seconds(seconds))
    }
}

/// What one fault-loop client printed (FaultLoopClient.swift in the helper lists the lines).
struct ClientLog {
    /// Record id to the attempt that committed it: acknowledged, or resolved as committed.
    var acknowledged: [Int: Int] = [:]
    var acknowledgedTimes: [Int: Int] = [:]
    var unknown = 0
    var resolvedCommitted = 0
    var resolvedAborted = 0
    var failed: [String: Int] = [:]
    var resubscriptions = 0
    /// Why live subscriptions ended (the errors their re-reads met).
    var endings: [String] = []
    var slow: [String] = []
    var failures: [String] = []
    var final: (count: Int, digest: UInt64, longest: String)?

    init(_ lines: [String]) {
        for printed in lines {
            // Lines end with the time they were printed (` @…`), for reading a kept log.
            let line = printed.range(of: " @", options: .backwards).map { String(printed[..<$0.lowerBound]) } ?? printed
            let words = line.split(separator: " ").map(String.init)
            switch words.first {
            case "ack"? where words.count == 3:
                commit(words)
            case "unknown"?:
                unknown += 1
            case "resolved"? where words.count == 4:
                if words[3] == "committed" {
                    resolvedCommitted += 1
                    commit(words)
                } else {
                    resolvedAborted += 1
                }
            case "failed"? where words.count == 4:
                failed[words[3], default: 0] += 1
            case "resubscribing"?:
                resubscriptions += 1
                endings.append(String(line.dropFirst("resubscribing after ".count).prefix(200)))
            case "slow"?:
                slow.append(line)
            case "FAIL"?:
                failures.append(line)
            case "final"? where words.count >= 3:
                if let count = Int(words[1]), let digest = UInt64(words[2]) {
                    final = (count, digest, line.components(separatedBy: "longest call ").last ?? "")
                }
            default:
                break
            }
        }
    }

    private mutating func commit(_ words: [String]) {
        guard let id = Int(words[1]), let attempt = Int(words[2]) else { return }
        acknowledged[id] = attempt
        acknowledgedTimes[id, default: 0] += 1
    }

    /// Adds `other`'s counts (for the run's summary).
    mutating func add(_ other: ClientLog) {
        unknown += other.unknown
        resolvedCommitted += other.resolvedCommitted
        resolvedAborted += other.resolvedAborted
        failed.merge(other.failed, uniquingKeysWith: +)
        resubscriptions += other.resubscriptions
        endings += other.endings
    }
}
