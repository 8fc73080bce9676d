import Foundation
import OpenCombineShim
import Reservoir

/// A history consumer killed at random moments: the test process keeps committing numbered
/// transactions while a child process consumes the store's history and applies each change set
/// to a file of its own, one line per change set that carries the change set's token: the line
/// is both what the consumer applied and the token it persists, so applying and persisting are
/// one append. The line is written in two `write` calls, so a kill can tear it; a restarted
/// consumer discards a torn last line and resumes after the token of the last whole one.
///
/// Each trial starts the consumer (reading with `history(after:limit:)`, the publisher, or the
/// async sequence), SIGKILLs it at a random moment, often in the middle of consumption, and
/// checks: the store's history is exactly what the test committed (tokens and changes), and the
/// consumer's whole lines are exactly its first change sets, in order, with no gap and none
/// twice, and include every change set the consumer reported applied. After the last trial a
/// consumer runs until it has caught up and exits; its file must then hold the whole history.
///
/// The child is an executable of the backend's own (it must link the backend) that calls
/// ``HistoryConsumerKill/childMain(registry:)`` when its first argument is ``childArgument``:
///
///     try await HistoryConsumerKill(child: try ChildProcess.builtExecutable("my-child"), registry: myRegistry)
///         .run(configuration: config, consumerFile: path, trials: 100, seed: 1)
public struct HistoryConsumerKill: Sendable {
    /// The consumer's executable.
    public let child: URL
    /// The registry the test opens the store with (the child uses its own).
    public let registry: BackendRegistry

    /// The first argument that makes a helper executable run ``childMain(registry:)``.
    public static let childArgument = "--history-consumer"

    /// A harness starting `child` as the consumer, opening the store through `registry`.
    public init(child: URL, registry: BackendRegistry) {
        self.child = child
        self.registry = registry
    }

    /// A committed record: commit `n` inserts item `n`; in every four commits one updates
    /// item `n - 1` and the next deletes item `n - 2` (so a later commit often deletes what an
    /// earlier one changed, and a consumer that reads both at once must still see both).
    struct Item: Storable {
        var id: Int
        var payload: String
        static let schema = Schema<Item>("history_kill_items", fields: [.field(\.payload)])
    }

    /// How many commits the test has made, updated by every commit.
    struct Tally: Storable {
        var id: Int
        var count: Int
        static let schema = Schema<Tally>("history_kill_tally", fields: [.field(\.count)])
    }

    /// How the consumer reads the history.
    enum Mode: String, CaseIterable {
        /// `store.history(after:limit:)` in a polling loop.
        case batch
        /// `store.historyPublisher(after:)` with a sink.
        case publisher
        /// `for try await` over `store.history(after:)`.
        case sequence
        /// `store.history(after:limit:)` until caught up, then exit 0 (the final run).
        case drain
    }

    /// What the trials saw, for the note a test prints.
    public struct Report: Sendable, CustomStringConvertible {
        public var trials = 0
        /// Kills that left the consumer behind the writer (killed while it had change sets to apply).
        public var killedBehind = 0
        /// Kills that tore the line being written (the restart discarded it).
        public var tornLines = 0
        /// Trials per way of reading: batch, publisher, async sequence.
        public var modes: [String: Int] = [:]
        /// Change sets committed by the test.
        public var changeSetsCommitted = 0
        /// Lines in the consumer's file at the end (each change set once).
        public var changeSetsApplied = 0
        public var description: String {
            let ways = modes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "\(trials) trials (\(ways)), \(killedBehind) killed while behind the writer, \(tornLines) torn lines discarded, "
                + "\(changeSetsCommitted) change sets committed, \(changeSetsApplied) applied once each"
        }
    }

    /// Runs `trials` kill-and-check rounds on the store `configuration` names, the consumer
    /// applying to `consumerFile` (which must not exist yet).
    @discardableResult
    public func run(configuration: String, consumerFile: String, trials: Int, seed: UInt64) async throws -> Report {
        // Kills are timed by polling the child's output, and the writer runs beside it: threads
        // of their own, not cooperative ones other tests need (see CrashConsistency.run).
        try await onOwnThread {
            Result { try runTrials(configuration: configuration, consumerFile: consumerFile, count: trials, seed: seed) }
        }.get()
    }

    // MARK: - The test process

    /// The change sets the test committed, with what each changed, as the writer thread records them.
    private final class Written: @unchecked Sendable {
        // @unchecked: `commits` and `failure` are guarded by `lock`.
        private let lock = NSLock()
        private var commits: [(token: HistoryToken, changes: Set<String>)] = []
        private var failure: (any Error)?

        func append(_ token: HistoryToken, _ changes: Set<String>) { lock.withLock { commits.append((token, changes)) } }
        func fail(_ error: any Error) { lock.withLock { failure = error } }
        var all: [(token: HistoryToken, changes: Set<String>)] { lock.withLock { commits } }
        var error: (any Error)? { lock.withLock { failure } }
    }

    private func runTrials(configuration: String, consumerFile: String, count trials: Int, seed: UInt64) throws -> Report {
        var g = SeededGenerator(seed: seed)
        var report = Report()
        let store = try Store.open(configuration, registry: registry)
        defer { store.close() }
        // A first commit, so that the store exists (and has its identity) before the start token.
        try store.write { tx in _ = try tx.upsert(Tally(id: 0, count: 0)) }
        let start = try store.currentHistoryToken
        let written = Written()
        var state = CheckState(start: start)

        for trial in 0..<trials {
            let what = "trial \(trial) on \(configuration)"
            let modes: [Mode] = [.batch, .publisher, .sequence]
            let mode = modes[Int(g.next() % 3)]
            let limit = 1 + Int(g.next() % 5)
            report.modes[mode.rawValue, default: 0] += 1
            let process = try ChildProcess(child, [Self.childArgument, configuration, consumerFile, start.description, mode.rawValue, String(limit)])
            // The writer commits while the consumer runs, so that kills land mid-consumption.
            let commits = 5 + Int(g.next() % 26)
            // A third of the commits follow the previous one at once: another process then
            // often finds several new commits in one look at the log.
            let pauses = (0..<commits).map { _ in g.next() % 3 == 0 ? 0 : UInt32(g.next() % 2000) }
            let finished = DispatchSemaphore(value: 0)
            let first = written.all.count
            Thread {
                defer { finished.signal() }
                do {
                    for (k, pause) in pauses.enumerated() {
                        let n = first + k
                        try store.write { tx in
                            try tx.insert(Item(id: n, payload: "commit \(n)"))
                            _ = try tx.upsert(Tally(id: 0, count: n + 1))
                            if n % 4 == 2 { try tx.update(Item(id: n - 1, payload: "updated by \(n)")) }
                            if n % 4 == 3 { _ = try tx.delete(Item.self, id: n - 2) }
                        }
                        var changes: Set<String> = ["history_kill_items \(n) inserted", "history_kill_tally 0 updated"]
                        if n % 4 == 2 { changes.insert("history_kill_items \(n - 1) updated") }
                        if n % 4 == 3 { changes.insert("history_kill_items \(n - 2) deleted") }
                        written.append(try store.currentHistoryToken, changes)
                        usleep(pause)
                    }
                } catch {
                    written.fail(error)
                }
            }.start()
            // Kill once the consumer has applied a random number of change sets (or at once, or
            // after 2 s), and sometimes a little later: before its first read, inside a read,
            // between the two halves of a line, between a line and the next read.
            let target = Int(g.next() % UInt64(commits + 1))
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning && Date() < deadline {
                if process.output.lazy.filter({ $0.hasPrefix("applied ") }).count >= target { break }
                usleep(300)
            }
            if g.next() % 2 == 0 { usleep(UInt32(g.next() % 3000)) }
            process.kill9()
            finished.wait()
            if let error = written.error { throw ConformanceFailure(message: "\(what): the writer failed: \(error)", file: #fileID, line: #line) }
            if let failure = process.output.first(where: { $0.hasPrefix("error ") }) {
                throw ConformanceFailure(message: "\(what) (\(mode)): the consumer failed: \(failure)", file: #fileID, line: #line)
            }
            let reported = process.output.compactMap { line in line.hasPrefix("applied ") ? UInt64(line.dropFirst("applied ".count)) : nil }
            let file = try check(store: store, written: written.all, consumerFile: consumerFile, reported: reported.max(),
                                 state: &state, what: "\(what) (\(mode), limit \(limit))")
            if file.torn { report.tornLines += 1 }
            if file.lines < written.all.count { report.killedBehind += 1 }
            report.trials += 1
        }

        // The last consumer runs until it has caught up: everything committed, each once.
        let process = try ChildProcess(child, [Self.childArgument, configuration, consumerFile, start.description, Mode.drain.rawValue, "7"])
        let status = process.waitUntilExit(within: 120)
        if let failure = process.output.first(where: { $0.hasPrefix("error ") }) {
            throw ConformanceFailure(message: "the catching-up consumer failed: \(failure)", file: #fileID, line: #line)
        }
        try expectEqual(status, 0, "the catching-up consumer's exit status (nil: it did not finish in 120 s)")
        let all = written.all
        let file = try check(store: store, written: all, consumerFile: consumerFile, reported: nil, state: &state, what: "after catching up")
        try expect(!file.torn, "after catching up: the consumer's file ends in a torn line")
        try expectEqual(file.lines, all.count, "after catching up: the consumer's change sets (every one committed, each once)")
        report.changeSetsCommitted = all.count
        report.changeSetsApplied = file.lines
        return report
    }

    /// What the checks have established so far.
    private struct CheckState {
        let start: HistoryToken
        /// The store's history after `start`, as each change set's line, checked against the writer's record.
        var expected: [String] = []
        /// Whole lines in the consumer's file at the last check.
        var lines = 0
    }

    /// Checks the store's history against what was written, and the consumer's file against the
    /// history; the file's whole lines and whether it ends in a torn one.
    private func check(store: Store, written: [(token: HistoryToken, changes: Set<String>)], consumerFile: String, reported: UInt64?,
                       state: inout CheckState, what: String) throws -> (lines: Int, torn: Bool) {
        // The history is exactly what was committed: same tokens, same changes, in order.
        let after = state.expected.isEmpty ? state.start : written[state.expected.count - 1].token
        let fresh = try store.history(after: after, limit: 1_000_000)
        try expectEqual(fresh.count, written.count - state.expected.count, "\(what): change sets in the history after \(after)")
        for (offset, changeSet) in fresh.enumerated() {
            let commit = written[state.expected.count + offset]
            try expectEqual(changeSet.token, commit.token, "\(what): the history's change set #\(state.expected.count + offset)'s token")
            try expectEqual(Set(changeSet.changes.map(\.description)), commit.changes, "\(what): the changes of \(changeSet.token)")
        }
        state.expected += fresh.map(\.description)

        // The consumer's whole lines are the history's first change sets, each once, in order.
        let data = FileManager.default.contents(atPath: consumerFile) ?? Data()
        let whole = data.lastIndex(of: 0x0A).map { data.startIndex...$0 }.map { data[$0] } ?? Data()
        let lines = String(decoding: whole, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        try expect(lines.count <= state.expected.count,
                   "\(what): the consumer applied \(lines.count) change sets, the store has \(state.expected.count): "
                   + (lines.count > Set(lines).count ? "some twice" : "some not in the history"))
        for (index, line) in lines.enumerated() where line != state.expected[index] {
            let seen = state.expected.firstIndex(of: line).map { $0 < index ? "a duplicate of change set #\($0)" : "change set #\($0), a gap" } ?? "not in the history"
            throw ConformanceFailure(message: "\(what): line \(index) of the consumer's file is \(seen): expected \"\(state.expected[index])\", found \"\(line)\"",
                                     file: #fileID, line: #line)
        }
        try expect(lines.count >= state.lines, "\(what): the consumer's file lost change sets: \(lines.count) lines, \(state.lines) before")
        if let reported {
            let last = lines.last.flatMap { $0.split(separator: " ").first }.flatMap { HistoryToken(String($0)) }?.sequence ?? 0
            try expect(reported <= last, "\(what): the consumer reported change set #\(reported) applied, its file ends at #\(last)")
        }
        state.lines = lines.count
        return (lines.count, whole.count < data.count)
    }

    // MARK: - The consumer process

    /// The consumer's whole program, `CHILD --history-consumer CONFIGURATION FILE START MODE LIMIT`:
    /// opens the store and the file, discards a torn last line, resumes after the last whole
    /// line's token (or `START`), and appends a line per change set (`HistoryChangeSet`'s
    /// description, the token first), printing `applied SEQUENCE` after each; in the `drain`
    /// mode it exits 0 once caught up, else it runs until killed. Prints `error …` and exits 2
    /// on any error.
    public static func childMain(registry: BackendRegistry) -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count == 6, arguments[0] == childArgument, let mode = Mode(rawValue: arguments[4]), let limit = Int(arguments[5]), limit > 0 else {
            fail("usage: CHILD \(childArgument) CONFIGURATION FILE START_TOKEN batch|publisher|sequence|drain LIMIT")
        }
        do {
            let consumer = try ConsumerFile(path: arguments[2], start: HistoryToken(parsing: arguments[3]))
            let store = try Store.open(arguments[1], registry: registry)
            switch mode {
            case .batch, .drain:
                var token = consumer.token
                while true {
                    let changeSets = try store.history(after: token, limit: limit)
                    for changeSet in changeSets {
                        try consumer.apply(changeSet)
                        token = changeSet.token
                    }
                    if changeSets.isEmpty {
                        if mode == .drain { exit(0) }
                        usleep(500)
                    }
                }
            case .publisher:
                let subscription = store.historyPublisher(after: consumer.token).sink(receiveCompletion: { completion in
                    fail("the history publisher ended: \(completion)")
                }, receiveValue: { changeSet in
                    do { try consumer.apply(changeSet) } catch { fail("\(error)") }
                })
                withExtendedLifetime(subscription) { waitToBeKilled() }
            case .sequence:
                let token = consumer.token
                Task {
                    do {
                        for try await changeSet in store.history(after: token) { try consumer.apply(changeSet) }
                        fail("the history sequence ended")
                    } catch {
                        fail("\(error)")
                    }
                }
                waitToBeKilled()
            }
        } catch {
            fail("\(error)")
        }
    }

    private static func waitToBeKilled() -> Never {
        while true { sleep(60) }
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardOutput.write(Data("error \(message.replacingOccurrences(of: "\n", with: " "))\n".utf8))
        exit(2)
    }

    /// The consumer's file: its lines are the change sets applied, and the last whole line's
    /// token is where the consumer resumes.
    private final class ConsumerFile: Sendable {
        let descriptor: Int32
        /// Where to resume: after the last whole line, or the start token for an empty file.
        let token: HistoryToken

        init(path: String, start: HistoryToken) throws {
            let data = FileManager.default.contents(atPath: path) ?? Data()
            let whole = data.lastIndex(of: 0x0A).map { $0 - data.startIndex + 1 } ?? 0
            descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            guard descriptor >= 0 else { throw ConformanceFailure(message: "cannot open \(path): errno \(errno)", file: #fileID, line: #line) }
            // A line torn by the kill was never applied: drop it.
            if whole < data.count && ftruncate(descriptor, off_t(whole)) != 0 {
                let number = errno
                close(descriptor)
                throw ConformanceFailure(message: "cannot truncate \(path): errno \(number)", file: #fileID, line: #line)
            }
            let lines = String(decoding: data.prefix(whole), as: UTF8.self).split(separator: "\n")
            if let last = lines.last, let text = last.split(separator: " ").first {
                token = try HistoryToken(parsing: String(text))
            } else {
                token = start
            }
        }

        deinit { close(descriptor) }

        /// Appends the change set's line, in two writes (so a kill can tear it), then reports it.
        func apply(_ changeSet: HistoryChangeSet) throws {
            let line = Array((changeSet.description + "\n").utf8)
            let half = line.count / 2
            try write(line[..<half])
            try write(line[half...])
            FileHandle.standardOutput.write(Data("applied \(changeSet.token.sequence)\n".utf8))
        }

        private func write(_ bytes: ArraySlice<UInt8>) throws {
            var rest = bytes
            while !rest.isEmpty {
                let count = rest.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else {
                    throw ConformanceFailure(message: "cannot append to the consumer's file: errno \(errno)", file: #fileID, line: #line)
                }
                rest = rest.dropFirst(count)
            }
        }
    }
}
