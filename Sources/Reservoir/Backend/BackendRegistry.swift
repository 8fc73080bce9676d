import Foundation

/// The schemes a process knows, each with its ``BackendFactory``.
///
/// ``shared`` knows `memory:` from the start; backend modules add theirs
/// (`BackendRegistry.shared.register(.sqlite)`). Tests and apps that prefer no global
/// state make their own registry and pass it to ``Store/open(_:registry:)``.
public final class BackendRegistry: Sendable {
    private let factories: Locked<[String: BackendFactory]>

    /// A registry knowing `memory:` and `factories`.
    public init(_ factories: [BackendFactory] = []) {
        var table = [MemoryBackend.factory.scheme: MemoryBackend.factory]
        for factory in factories { table[factory.scheme] = factory }
        self.factories = Locked(table)
    }

    /// The process-wide registry `Store.open` uses by default.
    public static let shared = BackendRegistry()

    /// Adds or replaces the factory for its scheme.
    public func register(_ factory: BackendFactory) {
        factories.withLock { $0[factory.scheme] = factory }
    }

    /// Removes a scheme; returns whether it was registered.
    @discardableResult
    public func unregister(scheme: String) -> Bool {
        factories.withLock { $0.removeValue(forKey: scheme.lowercased()) != nil }
    }

    /// The registered factories, by scheme.
    public var registered: [BackendFactory] {
        factories.withLock { $0.values.sorted { $0.scheme < $1.scheme } }
    }

    /// Makes the backend a configuration string names; throws `.invalidConfiguration`
    /// naming the string and the accepted schemes when the scheme is unknown.
    public func makeBackend(_ configuration: StoreConfiguration) throws -> any StorageBackend {
        guard let factory = factories.withLock({ $0[configuration.scheme] }) else {
            let accepted = registered.map(\.summary).joined(separator: ", ")
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\" names unknown scheme \"\(configuration.scheme):\"; accepted: \(accepted)")
        }
        return try factory.makeBackend(configuration)
    }
}
