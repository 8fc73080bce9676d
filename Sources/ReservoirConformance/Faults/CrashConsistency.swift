import Foundation
import OpenCombineShim
import Reservoir

/// Crash consistency: a child process commits numbered transactions (record `i` and a
/// counter saying `i + 1`, atomically) and prints each `i` once `write` has returned; the
/// test SIGKILLs it at a random moment, then checks the store: it opens, every reported
/// commit is there, no transaction is half there (the records are exactly `0..<counter`),
/// the change log agrees (one change set per commit), and a live subscription opened
/// afterwards equals a fetch. Then the next trial's child carries on in the same store.
///
/// The child is an executable of the backend's own (it must link the backend) whose main
/// calls ``CrashConsistency/childMain(registry:)``; the test runs:
///
///     try await CrashConsistency(child: try ChildProcess.builtExecutable("my-crash-child"),
///                                registry: myRegistry).run(configuration: config, trials: 100, seed: 1)
public struct CrashConsistency: Sendable {
    public let child: URL
    public let registry: BackendRegistry

    public init(child: URL, registry: BackendRegistry) {
        self.child = child
        self.registry = registry
    }

    /// The trials a run makes: `RESERVOIR_FAULT_TRIALS` when set (`scripts/test-deep` raises
    /// it), `count` otherwise.
    public static func trials(default count: Int = 25) -> Int {
        ProcessInfo.processInfo.environment["RESERVOIR_FAULT_TRIALS"].flatMap { Int($0) }.map { max(1, $0) } ?? count
    }

    /// A committed transaction's record.
    struct Entry: Storable {
        var id: Int
        var payload: String
        static let schema = Schema<Entry>("crash_entries", fields: [.field(\.payload)])
    }

    /// How many transactions have committed, kept in the same transaction as each entry.
    struct Counter: Storable {
        var id: Int
        var count: Int
        static let schema = Schema<Counter>("crash_counter", fields: [.field(\.count)])
    }

    /// What the trials saw, for the note a test prints.
    public struct Report: Sendable, CustomStringConvertible {
        public var trials = 0
        public var killedMidRun = 0
        public var commitsReported = 0
        public var commitsFound = 0
        public var description: String {
            "\(trials) trials, \(killedMidRun) killed while committing, \(commitsReported) commits reported before the kills, \(commitsFound) found after"
        }
    }

    /// Runs `trials` kill-and-check rounds on the store `configuration` names.
    @discardableResult
    public func run(configuration: String, trials: Int, seed: UInt64) async throws -> Report {
        // A kill is timed by polling the child's output: on a thread of its own. On a cooperative
        // thread starved by other tests, a child meant to be killed after at most 30 commits went
        // on for seconds (SQLite at durability=normal made 778,000 commits in 25 trials), and
        // every trial's check reads the whole store back.
        try await onOwnThread { Result { try runTrials(configuration: configuration, count: trials, seed: seed) } }.get()
    }

    private func runTrials(configuration: String, count trials: Int, seed: UInt64) throws -> Report {
        var g = SeededGenerator(seed: seed)
        var report = Report()
        var reported = Set<Int>()
        for trial in 0..<trials {
            let process = try ChildProcess(child, [configuration])
            // Kill after a random number of reported commits (0 to 30), so kills land before
            // the first commit, between commits and inside them.
            let target = Int(g.next() % 31)
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning && Date() < deadline {
                if process.output.filter({ $0.hasPrefix("committed ") }).count >= target { break }
                usleep(500)
            }
            if g.next() % 2 == 0 { usleep(UInt32(g.next() % 3000)) }  // and sometimes a little later
            let wasRunning = process.isRunning
            process.kill9()
            if let failure = process.output.first(where: { $0.hasPrefix("error ") }) {
                throw ConformanceFailure(message: "trial \(trial): the child failed: \(failure)", file: #fileID, line: #line)
            }
            if wasRunning { report.killedMidRun += 1 }
            for line in process.output where line.hasPrefix("committed ") {
                if let i = Int(line.dropFirst("committed ".count)) { reported.insert(i) }
            }
            try check(configuration: configuration, reported: reported, trial: trial, report: &report)
            report.trials += 1
        }
        report.commitsReported = reported.count
        return report
    }

    private func check(configuration: String, reported: Set<Int>, trial: Int, report: inout Report) throws {
        let store = try Store.open(configuration, registry: registry)
        defer { store.close() }
        let (entries, counter, sequence) = try store.read { snapshot in
            (try snapshot.fetch(Entry.self).map(\.id), try snapshot.get(Counter.self, id: 0)?.count ?? 0, try snapshot.lastSequence())
        }
        let what = "trial \(trial) on \(configuration)"
        try expectEqual(entries, Array(0..<counter), "\(what): the entries are exactly those the counter counts (no half transaction)")
        let missing = reported.subtracting(entries)
        try expect(missing.isEmpty, "\(what): commits reported before the kill are missing: \(missing.sorted().prefix(10))")
        try expectEqual(sequence, UInt64(counter), "\(what): the change log's last sequence (one change set per commit)")
        report.commitsFound = counter
        // A live subscription opened now starts from exactly what a fetch returns.
        let lock = NSLock()
        var first: [Int]?
        let subscription = store.objectsPublisher(for: FetchRequest<Entry>()).sink(receiveCompletion: { _ in }, receiveValue: { entries in
            lock.lock()
            if first == nil { first = entries.map(\.id) }
            lock.unlock()
        })
        subscription.cancel()
        lock.lock()
        let seen = first
        lock.unlock()
        try expectEqual(seen, entries, "\(what): a live subscription's first value")
    }

    /// The child's whole program: opens `CommandLine.arguments[1]`, then commits entry `i`
    /// with the counter at `i + 1`, from where the store stands, printing `committed i` after
    /// each `write` returns, until killed. Prints `error …` and exits 2 on any error.
    public static func childMain(registry: BackendRegistry) -> Never {
        let arguments = CommandLine.arguments
        guard arguments.count == 2 else {
            FileHandle.standardError.write(Data("usage: \(arguments.first ?? "child") CONFIGURATION\n".utf8))
            exit(2)
        }
        do {
            let store = try Store.open(arguments[1], registry: registry)
            var next = try store.get(Counter.self, id: 0)?.count ?? 0
            let payload = String(repeating: "x", count: 200)
            while true {
                try store.write { tx in
                    try tx.insert(Entry(id: next, payload: payload))
                    try tx.upsert(Counter(id: 0, count: next + 1))
                }
                FileHandle.standardOutput.write(Data("committed \(next)\n".utf8))
                next += 1
            }
        } catch {
            FileHandle.standardOutput.write(Data("error \(String(describing: error).replacingOccurrences(of: "\n", with: " "))\n".utf8))
            exit(2)
        }
    }
}
