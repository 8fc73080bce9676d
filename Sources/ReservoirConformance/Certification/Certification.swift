import Foundation
import Reservoir

/// Certifies a backend in one call: every conformance case, the differential test beside
/// `memory:`, the query fuzzer and, for a persistent backend, the crash test. Passing all of
/// it is what "supported" means (Backends.md, "Writing and certifying a backend").
///
///     @Test func certification() async throws {
///         let harness = ConformanceHarness.inTemporaryDirectories(registry: BackendRegistry([.mine]), scheme: "mine", file: "store")
///         let report = await Certification(harness: harness, crashChild: try ChildProcess.builtExecutable("MineCrashChild")).run()
///         for skip in report.skipped { withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + skip)) } }
///         #expect(report.isCertified, "\(report)")
///     }
///
/// The crash child is an executable of yours whose whole program is
/// `CrashConsistency.childMain(registry: BackendRegistry([.mine]))`; without one a persistent
/// backend is not certified (``CertificationReport/notRun`` says why). The budgets follow
/// `RESERVOIR_FUZZ_ITERATIONS`, `RESERVOIR_FUZZ_SEED` and `RESERVOIR_FAULT_TRIALS`.
public struct Certification: Sendable {
    /// Makes the backend's stores.
    public var harness: ConformanceHarness
    /// How failures name the backend: the harness's first configuration's scheme by default.
    public var name: String
    /// Writes as a client outside this library would (plain SQL for SQLite), for the
    /// differential test's foreign steps; nil when there is no such client.
    public var foreignWriter: DifferentialBackend.ForeignWriter?
    /// An executable calling ``CrashConsistency/childMain(registry:)`` with a registry that
    /// knows the backend.
    public var crashChild: URL?
    /// The differential test's sequences (seed and steps each).
    public var differentialBudget: [(seed: UInt64, steps: Int)]
    /// The query fuzzer's seeds and queries.
    public var fuzzBudget: [(seed: UInt64, queries: Int)]
    /// SIGKILL trials of the crash test.
    public var crashTrials: Int

    public init(harness: ConformanceHarness, name: String? = nil, foreignWriter: DifferentialBackend.ForeignWriter? = nil, crashChild: URL? = nil) {
        self.harness = harness
        self.name = name ?? "the backend under test"
        self.foreignWriter = foreignWriter
        self.crashChild = crashChild
        differentialBudget = DifferentialTest.budget()
        fuzzBudget = QueryFuzzer.budget()
        crashTrials = CrashConsistency.trials()
    }

    /// Runs every part and reports what passed, what was skipped and every failure; it
    /// throws nothing, so one failing part does not hide another.
    public func run() async -> CertificationReport {
        var report = CertificationReport()
        var capabilities: BackendCapabilities?
        for testCase in ConformanceSuite.cases {
            do {
                switch try await testCase.run(using: harness) {
                case .passed: report.passed.append("conformance: \(testCase.id)")
                case let .skipped(reason): report.skipped.append("conformance: " + reason)
                }
            } catch {
                report.failures.append(CertificationReport.Failure(part: "conformance", name: testCase.id, message: "\(error)"))
            }
        }
        do {
            capabilities = try probeCapabilities()
        } catch {
            report.failures.append(CertificationReport.Failure(part: "opening", name: name, message: "\(error)"))
        }

        let differential = DifferentialTest(backends: [
            DifferentialBackend("memory:", harness: .memory),
            DifferentialBackend(name, harness: harness, foreignWriter: foreignWriter),
        ])
        let fuzzer = QueryFuzzer(harness: harness)
        let (differentialBudget, fuzzBudget) = (self.differentialBudget, self.fuzzBudget)
        // Minutes of synchronous work: on a thread of its own, not one of Swift's cooperative
        // threads (as many as cores), which other tests of the same run need meanwhile.
        let generated = await onOwnThread { () -> CertificationReport in
            var part = CertificationReport()
            for (seed, steps) in differentialBudget {
                do {
                    try differential.run(seed: seed, steps: steps)
                    part.passed.append("differential: seed \(seed), \(steps) steps")
                } catch {
                    part.failures.append(CertificationReport.Failure(part: "differential", name: "seed \(seed)", message: "\(error)"))
                }
            }
            for (seed, queries) in fuzzBudget {
                do {
                    try fuzzer.run(seed: seed, queries: queries)
                    part.passed.append("query fuzzer: seed \(seed), \(queries) queries")
                } catch {
                    part.failures.append(CertificationReport.Failure(part: "query fuzzer", name: "seed \(seed)", message: "\(error)"))
                }
            }
            return part
        }
        report.passed += generated.passed
        report.failures += generated.failures

        guard let capabilities, capabilities.contains(.persistent) else { return report }
        guard let crashChild else {
            report.notRun.append("crash test: \(name) is persistent and no crashChild was given (an executable calling CrashConsistency.childMain(registry:))")
            return report
        }
        do {
            let configuration = try harness.freshConfiguration()
            defer { harness.cleanup(configuration) }
            let crash = try await CrashConsistency(child: crashChild, registry: harness.registry).run(configuration: configuration, trials: crashTrials, seed: 1)
            report.passed.append("crash test: \(crash)")
        } catch {
            report.failures.append(CertificationReport.Failure(part: "crash test", name: name, message: "\(error)"))
        }
        return report
    }

    /// The capabilities of a store the harness makes.
    private func probeCapabilities() throws -> BackendCapabilities {
        let configuration = try harness.freshConfiguration()
        defer { harness.cleanup(configuration) }
        let store = try Store.open(configuration, registry: harness.registry)
        defer { store.close() }
        return store.capabilities
    }
}

/// What ``Certification/run()`` found.
public struct CertificationReport: Sendable, CustomStringConvertible {
    /// One part's failure: the part ("conformance", "differential", "query fuzzer", "crash
    /// test"), which case or seed, and what went wrong (a differential failure's message
    /// holds the shrunk sequence as a test to paste).
    public struct Failure: Sendable, CustomStringConvertible {
        public let part: String
        public let name: String
        public let message: String
        public var description: String { "\(part) \(name): \(message)" }
    }

    /// Each case and seed that passed.
    public var passed: [String] = []
    /// Cases that do not apply to the backend, each with its reason: counted, never passed.
    public var skipped: [String] = []
    /// Parts that should have run and could not (a persistent backend without a crash child).
    public var notRun: [String] = []
    /// Everything that broke the contract.
    public var failures: [Failure] = []

    /// No failure, and every part that applies ran.
    public var isCertified: Bool { failures.isEmpty && notRun.isEmpty }

    /// The ids of the conformance cases that failed.
    public var failedCases: [String] {
        failures.filter { $0.part == "conformance" }.map(\.name)
    }

    /// The parts that failed, each once, in the order they ran.
    public var failedParts: [String] {
        var seen: [String] = []
        for failure in failures where !seen.contains(failure.part) { seen.append(failure.part) }
        return seen
    }

    public var description: String {
        var lines = ["\(isCertified ? "certified" : "not certified"): \(passed.count) passed, \(skipped.count) skipped, \(notRun.count) not run, \(failures.count) failed"]
        lines += failures.map { "  FAILED " + $0.description }
        lines += notRun.map { "  NOT RUN " + $0 }
        lines += skipped.map { "  skipped " + $0 }
        return lines.joined(separator: "\n")
    }
}
