import Foundation
import Reservoir

/// The backend conformance suite: what "supported" means.
///
/// Every case opens fresh stores through a ``ConformanceHarness`` and checks one
/// guarantee of the contract in Backends.md. A backend's test target runs all of them,
/// each reported on its own:
///
///     import Testing
///     import ReservoirConformance
///
///     let harness = ConformanceHarness(registry: BackendRegistry([.sqlite])) {
///         "sqlite:\(NSTemporaryDirectory())/\(UUID().uuidString).sqlite"
///     }
///
///     @Test(arguments: ConformanceSuite.cases)
///     func conformance(_ testCase: ConformanceCase) async throws {
///         if case let .skipped(reason) = try await testCase.run(using: harness) {
///             withKnownIssue { Issue.record(Comment(rawValue: "skipped: " + reason)) }
///         }
///     }
public enum ConformanceSuite {
    /// Every case, grouped and named `group/name`.
    public static let cases: [ConformanceCase] =
        updateCases + countCases + sectionCases + observableCases +
        valueCases + crudCases + predicateCases + sortCases + transactionCases
        + changeSetCases + liveFetchCases + routingCases + persistenceCases + [fallingBehindCase, commitSignalCase] + configurationCases + cacheCases + verifyCases + readOnlyCases + foldingCases

    /// The case called `group/name`, if any.
    public static func named(_ id: String) -> ConformanceCase? {
        cases.first { $0.id == id }
    }
}

/// How the suite makes stores on the backend under test.
public struct ConformanceHarness: Sendable {
    /// The registry the configurations are opened through.
    public let registry: BackendRegistry
    let freshConfiguration: @Sendable () throws -> String
    let cleanup: @Sendable (String) -> Void
    /// A `key=value` option that makes the backend keep only a few change sets (say 5) in its
    /// change log, for the cases about a store falling behind it; without one they are skipped.
    /// The cases write 150 change sets, so a backend may trim lazily.
    public let shortChangeLog: String?

    /// - Parameters:
    ///   - registry: knows the backend's scheme.
    ///   - freshConfiguration: a configuration string for a new, empty store each call
    ///     (a new temporary path for file-backed backends).
    ///   - cleanup: removes what a configuration created, after the case.
    ///   - shortChangeLog: an option keeping only a few change sets in the change log
    ///     (multi-process backends), such as `retention=5`.
    public init(
        registry: BackendRegistry = .shared,
        freshConfiguration: @escaping @Sendable () throws -> String,
        cleanup: @escaping @Sendable (String) -> Void = { _ in },
        shortChangeLog: String? = nil
    ) {
        self.registry = registry
        self.freshConfiguration = freshConfiguration
        self.cleanup = cleanup
        self.shortChangeLog = shortChangeLog
    }
}

extension ConformanceHarness {
    /// A harness for a file-backed backend: each store is `scheme:` + `file` + `options` in a
    /// fresh `TemporaryDirectory`, removed with everything in it after the case.
    public static func inTemporaryDirectories(
        registry: BackendRegistry, scheme: String, file: String, options: String = "", shortChangeLog: String? = nil
    ) -> ConformanceHarness {
        ConformanceHarness(
            registry: registry,
            freshConfiguration: { "\(scheme):" + (try TemporaryDirectory("reservoir-\(scheme)-store")).file(file) + options },
            cleanup: { configuration in
                guard let parsed = try? StoreConfiguration(configuration) else { return }
                try? FileManager.default.removeItem(at: URL(fileURLWithPath: parsed.location).deletingLastPathComponent())
            },
            shortChangeLog: shortChangeLog
        )
    }
}

/// What running a case came to when it did not throw.
public enum ConformanceOutcome: Sendable, Equatable {
    case passed
    /// The backend lacks a capability the case needs.
    case skipped(String)
}

/// One named guarantee of the contract.
public struct ConformanceCase: Sendable, Identifiable, CustomStringConvertible {
    /// The case's group, such as "values" or "predicates".
    public let group: String
    /// The case's name within its group.
    public let name: String
    /// Capabilities the backend needs for the case to apply.
    public let requirements: BackendCapabilities
    /// Whether the case needs the harness's ``ConformanceHarness/shortChangeLog`` option.
    public let needsShortChangeLog: Bool
    let body: @Sendable (ConformanceContext) async throws -> Void

    /// A case whose checks wait (for other stores, other tasks).
    init(_ group: String, _ name: String, requires requirements: BackendCapabilities = [], needsShortChangeLog: Bool = false,
         waiting body: @escaping @Sendable (ConformanceContext) async throws -> Void) {
        self.group = group
        self.name = name
        self.requirements = requirements
        self.needsShortChangeLog = needsShortChangeLog
        self.body = body
    }

    /// A case whose checks run straight through; the store's synchronous API is used,
    /// as most apps use it.
    init(_ group: String, _ name: String, requires requirements: BackendCapabilities = [],
         _ body: @escaping @Sendable (ConformanceContext) throws -> Void) {
        self.init(group, name, requires: requirements, waiting: { try body($0) })
    }

    public var id: String { "\(group)/\(name)" }
    public var description: String { id }

    /// Runs the case on a fresh store. Throws ``ConformanceFailure`` (or the error the
    /// store threw) when the backend breaks the contract.
    @discardableResult
    public func run(using harness: ConformanceHarness) async throws -> ConformanceOutcome {
        let context = try ConformanceContext(harness: harness)
        defer { context.finish() }
        let missing = requirements.subtracting(context.store.capabilities)
        if !missing.isEmpty {
            return .skipped("\(id) needs a backend that is \(missing); \(context.configuration) is not")
        }
        if needsShortChangeLog && harness.shortChangeLog == nil {
            return .skipped("\(id) needs a harness with a shortChangeLog option (a change log of a few change sets)")
        }
        try await body(context)
        return .passed
    }
}

/// A case's failure: which guarantee broke, with what was expected and what was seen.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public let message: String
    public let file: String
    public let line: Int
    public var description: String { "\(message) [\(file):\(line)]" }
}

/// What a case works with: the harness, its configuration, and the stores it opened.
public final class ConformanceContext: @unchecked Sendable {
    // @unchecked: `opened` is guarded by `lock`; the rest is immutable.
    let harness: ConformanceHarness
    /// The configuration string of this case's store.
    public let configuration: String
    /// The store the case runs on.
    public let store: Store
    private let lock = NSLock()
    private var opened: [Store] = []

    init(harness: ConformanceHarness) throws {
        self.harness = harness
        configuration = try harness.freshConfiguration()
        store = try Store.open(configuration, registry: harness.registry)
        opened = [store]
    }

    /// Opens another store on the same configuration (a second handle on the same data),
    /// with `option` (such as `mode=readonly`) added to its options when given.
    public func openAnother(adding option: String? = nil) throws -> Store {
        var configuration = configuration
        if let option { configuration += (configuration.contains("?") ? "&" : "?") + option }
        let another = try Store.open(configuration, registry: harness.registry)
        lock.lock()
        opened.append(another)
        lock.unlock()
        return another
    }

    /// Closes every store the case opened, then the harness cleans up.
    func finish() {
        lock.lock()
        let stores = opened
        opened = []
        lock.unlock()
        for store in stores { store.close() }
        harness.cleanup(configuration)
    }
}

// MARK: - Checks

func expect(_ condition: Bool, _ message: @autoclosure () -> String, file: String = #fileID, line: Int = #line) throws {
    if !condition { throw ConformanceFailure(message: message(), file: file, line: line) }
}

func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: @autoclosure () -> String, file: String = #fileID, line: Int = #line) throws {
    if actual != expected {
        throw ConformanceFailure(message: "\(what()): expected \(expected), got \(actual)", file: file, line: line)
    }
}

/// Runs `body`, which must throw a ``ReservoirError`` with `code`; returns it.
@discardableResult
func expectError<R>(_ code: ReservoirError.Code, _ what: @autoclosure () -> String, file: String = #fileID, line: Int = #line, _ body: () throws -> R) throws -> ReservoirError {
    do {
        let result = try body()
        throw ConformanceFailure(message: "\(what()): expected a ReservoirError \(code), got a result: \(result)", file: file, line: line)
    } catch let error as ReservoirError {
        if error.code != code {
            throw ConformanceFailure(message: "\(what()): expected ReservoirError \(code), got \(error.code): \(error)", file: file, line: line)
        }
        return error
    } catch let failure as ConformanceFailure {
        throw failure
    } catch {
        throw ConformanceFailure(message: "\(what()): expected ReservoirError \(code), got \(type(of: error)): \(error)", file: file, line: line)
    }
}

