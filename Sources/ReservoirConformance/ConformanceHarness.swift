import Foundation
import Reservoir

/// How the suite makes stores on the backend under test.
public struct ConformanceHarness: Sendable {
    /// The registry the configurations are opened through.
    public let registry: BackendRegistry
    /// Makes the configuration string of a new, empty store (a new temporary path for a
    /// file-backed backend); every part of certification makes its stores through it, and a
    /// backend's own tests may too.
    public let freshConfiguration: @Sendable () throws -> String
    /// Removes what a configuration from ``freshConfiguration`` created, after its stores closed.
    public let cleanup: @Sendable (String) -> Void
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
    /// `memory:` stores, each independent: the reference a backend is compared with by
    /// ``DifferentialTest`` and ``Certification``.
    public static let memory = ConformanceHarness(registry: BackendRegistry()) { "memory:" }
}
