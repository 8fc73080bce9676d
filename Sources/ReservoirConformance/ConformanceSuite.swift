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
        + reopeningCases + spiCases + closingCases + historyCases + historyRetentionCases + syncCases + migrationCases

    /// The case called `group/name`, if any.
    public static func named(_ id: String) -> ConformanceCase? {
        cases.first { $0.id == id }
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

