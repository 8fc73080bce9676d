import Foundation
import Reservoir

/// One named guarantee of the contract.
public struct ConformanceCase: Sendable, Identifiable, CustomStringConvertible {
    /// The case's group, such as "values" or "predicates".
    public let group: String
    /// The case's name within its group.
    public let name: String
    /// Capabilities the backend needs for the case to apply.
    public let requirements: BackendCapabilities
    /// Capabilities that make the case not apply (a rule only for backends without them).
    public let exclusions: BackendCapabilities
    /// Whether the case needs the harness's ``ConformanceHarness/shortChangeLog`` option.
    public let needsShortChangeLog: Bool
    let body: @Sendable (ConformanceContext) async throws -> Void

    /// A case whose checks wait (for other stores, other tasks).
    init(_ group: String, _ name: String, requires requirements: BackendCapabilities = [], excludes exclusions: BackendCapabilities = [],
         needsShortChangeLog: Bool = false, waiting body: @escaping @Sendable (ConformanceContext) async throws -> Void) {
        self.group = group
        self.name = name
        self.requirements = requirements
        self.exclusions = exclusions
        self.needsShortChangeLog = needsShortChangeLog
        self.body = body
    }

    /// A case whose checks run straight through; the store's synchronous API is used,
    /// as most apps use it.
    init(_ group: String, _ name: String, requires requirements: BackendCapabilities = [], excludes exclusions: BackendCapabilities = [],
         _ body: @escaping @Sendable (ConformanceContext) throws -> Void) {
        self.init(group, name, requires: requirements, excludes: exclusions, waiting: { try body($0) })
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
        let excluded = exclusions.intersection(context.store.capabilities)
        if !excluded.isEmpty {
            return .skipped("\(id) applies only to a backend that is not \(excluded); \(context.configuration) is")
        }
        if needsShortChangeLog && harness.shortChangeLog == nil {
            return .skipped("\(id) needs a harness with a shortChangeLog option (a change log of a few change sets)")
        }
        do {
            try await body(context)
        } catch let skip as ConformanceSkip {
            return .skipped("\(id) " + skip.reason)
        }
        return .passed
    }
}
