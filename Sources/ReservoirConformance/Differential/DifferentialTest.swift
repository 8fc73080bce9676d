import Foundation
import Reservoir

/// The stateful differential test: random sequences of writes (failing, empty, read-only,
/// by a second store, by a foreign client), reopenings (which close the store under its
/// subscriptions, each of which must end once) and subscription changes, run on every backend
/// at once and on a reference model; a second store watching with its own subscriptions and
/// `@Observable` live objects are checked after every step too. After every step every backend must
/// agree with the model on each request's fetch and count, every get, the last sequence
/// and the change sets published, and the backends must agree with each other on
/// everything each live subscription emitted; each subscription's values must fold to a
/// fresh fetch. A failure is shrunk to a short sequence printed as a test to paste.
///
///     let test = DifferentialTest(backends: [
///         DifferentialBackend("memory:", harness: .memory),
///         DifferentialBackend("mydb:", harness: myHarness),
///     ])
///     try test.run(seed: 1, steps: 200)
public struct DifferentialTest: Sendable {
    public let backends: [DifferentialBackend]

    public init(backends: [DifferentialBackend]) {
        self.backends = backends
    }

    /// Runs `steps` random steps generated from `seed`. On a discrepancy, shrinks the
    /// sequence and throws a ``DifferentialFailure`` whose description holds the seed and
    /// the shrunk sequence as a ready-to-paste test.
    public func run(seed: UInt64, steps: Int) throws {
        let generated = DifferentialGenerator.steps(seed: seed, count: steps)
        guard var failure = firstFailure(generated) else { return }
        failure.seed = seed
        failure.generatedCount = steps
        failure.shrunk = shrink(Array(generated.prefix(failure.stepIndex + 1)), runs: &failure.shrinkRuns)
        throw failure
    }

    /// Runs exactly `steps`; throws a ``DifferentialFailure`` at the first discrepancy.
    public func replay(_ steps: [DifferentialStep]) throws {
        if var failure = firstFailure(steps) {
            failure.shrunk = Array(steps.prefix(failure.stepIndex + 1))
            throw failure
        }
    }

    // MARK: - Budget

    /// The seeds and steps a test run uses: `count` sequences of `steps` steps by default;
    /// `RESERVOIR_FUZZ_ITERATIONS` sets the total number of steps instead, and
    /// `RESERVOIR_FUZZ_SEED` the first seed (a failure's printed seed replays it).
    public static func budget(defaultSequences count: Int = 8, steps: Int = 150) -> [(seed: UInt64, steps: Int)] {
        let environment = ProcessInfo.processInfo.environment
        let first = environment["RESERVOIR_FUZZ_SEED"].flatMap(FuzzBudget.parseSeed) ?? 0x5EED_0000
        let total = environment["RESERVOIR_FUZZ_ITERATIONS"].flatMap { Int($0) }.map { max(1, $0) } ?? count * steps
        let sequences = environment["RESERVOIR_FUZZ_SEED"] != nil && environment["RESERVOIR_FUZZ_ITERATIONS"] == nil
            ? 1 : (total + steps - 1) / steps
        return (0..<sequences).map { (first &+ UInt64($0), steps) }
    }

    // MARK: - Running

    /// Runs `steps` on fresh stores; the first discrepancy, or nil.
    func firstFailure(_ steps: [DifferentialStep]) -> DifferentialFailure? {
        var replicas: [DifferentialReplica] = []
        defer { for replica in replicas { replica.finish() } }
        do {
            for backend in backends { replicas.append(try DifferentialReplica(backend)) }
        } catch {
            return DifferentialFailure(stepIndex: -1, message: "opening a store failed: \(error)", steps: steps)
        }
        var model = DifferentialModel()
        for (index, step) in steps.enumerated() {
            do {
                try perform(step, on: replicas, model: &model)
            } catch let message as Discrepancy {
                return DifferentialFailure(stepIndex: index, message: message.text, steps: steps)
            } catch {
                return DifferentialFailure(stepIndex: index, message: "the step threw \(DifferentialReplica.describe(error)): \(error)", steps: steps)
            }
        }
        return nil
    }

    private struct Discrepancy: Error {
        let text: String
    }

    private func perform(_ step: DifferentialStep, on replicas: [DifferentialReplica], model: inout DifferentialModel) throws {
        var expectedLines: [String] = []
        var expectedChangeSets: [String] = []
        var foreign: (put: [DifferentialNote], delete: [Int]) = ([], [])
        switch step {
        case let .write(operations, failing):
            let outcome = model.write(operations, failing: failing)
            expectedLines = outcome.lines
            expectedChangeSets = outcome.changeSet.map { [$0] } ?? []
        case let .writeElsewhere(operations):
            let outcome = model.write(operations, failing: false)
            expectedLines = outcome.lines
            expectedChangeSets = outcome.changeSet.map { [$0] } ?? []
        case let .foreign(put, delete):
            foreign = model.foreignChanges(put: put, delete: delete)
            expectedChangeSets = model.foreign(put: foreign.put, delete: foreign.delete).map { [$0] } ?? []
        case let .migrate(migration):
            let outcome = model.migrate(migration)
            expectedLines = outcome.lines
            expectedChangeSets = outcome.changeSet.map { [$0] } ?? []
        case .reopen, .request, .resubscribe:
            break
        }

        var firstLines: [String: [String]]?
        var firstName = ""
        for replica in replicas {
            let lines = try replica.run(step, foreign: foreign)
            try expect(replica, "what the write's operations did", lines, expectedLines)
            let seen = replica.observers.drain()
            if let problem = seen.problems.first { throw Discrepancy(text: "\(replica.name): \(problem)") }
            try expect(replica, "change sets published", seen.changeSets, expectedChangeSets)
            try checkState(replica, model: model)
            if let problem = replica.watchers?.problems(model: model).first { throw Discrepancy(text: "\(replica.name): \(problem)") }
            if let problem = try replica.advanceHistory(model: model).first { throw Discrepancy(text: "\(replica.name): \(problem)") }
            if let firstLines {
                for name in Set(firstLines.keys).union(seen.lines.keys).sorted() where firstLines[name] != seen.lines[name] {
                    throw Discrepancy(text: "subscriber \"\(name)\" received \(show(seen.lines[name] ?? [])) on \(replica.name) but \(show(firstLines[name] ?? [])) on \(firstName)")
                }
            } else {
                firstLines = seen.lines
                firstName = replica.name
            }
        }
    }

    /// Fetches, counts, gets and the last sequence against the model; folded subscriptions
    /// against fresh fetches.
    private func checkState(_ replica: DifferentialReplica, model: DifferentialModel) throws {
        let store = replica.store
        try store.read { snapshot in
            for (index, request) in DifferentialNote.requests.enumerated() {
                let expected = model.fetch(index)
                try expect(replica, "fetch of request \(index)", DifferentialRender.list(try snapshot.fetch(request)), DifferentialRender.list(expected))
                try expect(replica, "count of request \(index)", try snapshot.count(request), expected.count)
            }
            for id in DifferentialNote.ids {
                try expect(replica, "get \(id)", try snapshot.get(DifferentialNote.self, id: id)?.description ?? "nil", model.get(id)?.description ?? "nil")
            }
            try expect(replica, "last sequence", try snapshot.lastSequence(), model.sequence)
        }
        // Outside a snapshot, the backend's point read (`withRow(_:id:_:)`: a row the backend
        // may lend and refill) after whatever writes the steps made.
        for id in DifferentialNote.ids {
            try expect(replica, "store get \(id)", try store.get(DifferentialNote.self, id: id)?.description ?? "nil", model.get(id)?.description ?? "nil")
        }
        for (name, request) in replica.observers.foldChecks {
            try expect(replica, "what subscriber \"\(name)\" folds to", DifferentialRender.list(replica.observers.folded(name)), DifferentialRender.list(model.fetch(request)))
        }
    }

    private func expect<T: Equatable>(_ replica: DifferentialReplica, _ what: String, _ actual: T, _ expected: T) throws {
        guard actual != expected else { return }
        throw Discrepancy(text: "\(replica.name): \(what): expected \(show(expected)), got \(show(actual))")
    }

    private func show<T>(_ value: T) -> String {
        if let lines = value as? [String] { return lines.isEmpty ? "nothing" : lines.joined(separator: " | ") }
        return "\(value)"
    }

    // MARK: - Shrinking

    /// Removes chunks of steps, then operations inside steps, while the sequence still fails.
    /// Bounded by `maxRuns` runs of the backends.
    func shrink(_ failing: [DifferentialStep], runs: inout Int, maxRuns: Int = 600) -> [DifferentialStep] {
        var current = SequenceShrinker.removingChunks(failing, runs: &runs, maxRuns: maxRuns) { firstFailure($0)?.stepIndex }
        var index = 0
        while index < current.count && runs < maxRuns {
            var simplified = false
            for simpler in current[index].simpler where runs < maxRuns {
                var candidate = current
                candidate[index] = simpler
                runs += 1
                if let failure = firstFailure(candidate) {
                    current = Array(candidate.prefix(failure.stepIndex + 1))
                    simplified = true
                    break
                }
            }
            if !simplified { index += 1 }
        }
        return current
    }
}

/// Reading the fuzzers' budget from the environment.
enum FuzzBudget {
    /// A decimal or `0x` hexadecimal seed.
    static func parseSeed(_ text: String) -> UInt64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased().hasPrefix("0x") { return UInt64(trimmed.dropFirst(2), radix: 16) }
        return UInt64(trimmed)
    }
}
