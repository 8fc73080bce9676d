import Foundation

/// How to make a backend for one URL scheme.
///
///     BackendRegistry.shared.register(BackendFactory(scheme: "redis", summary: "redis:HOST:PORT") { config in
///         try RedisBackend(config)
///     })
public struct BackendFactory: Sendable {
    /// The scheme, lower case, without the colon.
    public let scheme: String
    /// A one-line form for messages and help, such as `sqlite:PATH[?durability=normal|full]`.
    public let summary: String
    let make: @Sendable (StoreConfiguration) throws -> any StorageBackend

    /// A factory for `scheme`; `summary` shows the accepted form in messages, `make` opens a backend for a parsed configuration.
    public init(scheme: String, summary: String, make: @escaping @Sendable (StoreConfiguration) throws -> any StorageBackend) {
        self.scheme = scheme.lowercased()
        self.summary = summary
        self.make = make
    }

    /// Makes a backend for `configuration`, whose scheme must be this factory's.
    public func makeBackend(_ configuration: StoreConfiguration) throws -> any StorageBackend {
        try make(configuration)
    }
}
