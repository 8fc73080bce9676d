import Reservoir

/// Settings of a ``SQLiteBackend``, from the options of a `sqlite:` configuration string.
///
///     sqlite:./app.sqlite?durability=full&busytimeout=10000&retention=50000&readers=8
public struct SQLiteOptions: Sendable, Hashable {
    /// How much a committed transaction survives.
    public enum Durability: String, Sendable, Hashable, CaseIterable {
        /// `synchronous=NORMAL` in WAL mode: a commit survives the process being killed;
        /// the last commits before a power loss or OS crash may be rolled back (never corrupted).
        case normal
        /// `synchronous=FULL`: every commit is synced to disk before `write` returns, so it
        /// also survives power loss.
        case full
    }

    public var durability: Durability
    /// How long a connection waits for another process's lock before failing with `.busy`.
    public var busyTimeoutMilliseconds: Int32
    /// How many change sets the persisted change log keeps (0 keeps all).
    public var retention: Int
    /// How many idle reader connections are kept for reuse.
    public var readers: Int

    public init(durability: Durability = .normal, busyTimeoutMilliseconds: Int32 = 5000, retention: Int = 10_000, readers: Int = 4) {
        self.durability = durability
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.retention = retention
        self.readers = readers
    }

    /// The option names a `sqlite:` configuration string accepts.
    public static let names = ["busytimeout", "durability", "readers", "retention"]

    /// Reads the options of `configuration`; throws `.invalidConfiguration` naming an unknown
    /// option or a bad value and what is accepted.
    public init(_ configuration: StoreConfiguration) throws {
        try configuration.checkOptions(allowed: Self.names)
        self.init()
        func invalid(_ key: String, _ value: String, _ expected: String) -> ReservoirError {
            ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.string)\": option \(key)=\(value) is not valid; expected \(expected)")
        }
        if let value = configuration.options["durability"] {
            guard let durability = Durability(rawValue: value.lowercased()) else {
                throw invalid("durability", value, "normal or full")
            }
            self.durability = durability
        }
        if let value = configuration.options["busytimeout"] {
            guard let milliseconds = Int32(value), milliseconds >= 0 else {
                throw invalid("busytimeout", value, "a number of milliseconds, 0 or more")
            }
            busyTimeoutMilliseconds = milliseconds
        }
        if let value = configuration.options["retention"] {
            guard let count = Int(value), count >= 0 else {
                throw invalid("retention", value, "a number of change sets to keep, or 0 to keep all")
            }
            retention = count
        }
        if let value = configuration.options["readers"] {
            guard let count = Int(value), count >= 1, count <= 64 else {
                throw invalid("readers", value, "a number of idle reader connections from 1 to 64")
            }
            readers = count
        }
    }
}

extension BackendFactory {
    /// The factory for `sqlite:PATH[?durability=normal|full&busytimeout=MS&retention=N&readers=N]`.
    ///
    ///     let registry = BackendRegistry([.sqlite])
    ///     let store = try Store.open("sqlite:./app.sqlite", registry: registry)
    public static let sqlite = BackendFactory(
        scheme: "sqlite",
        summary: "sqlite:PATH[?durability=normal|full&busytimeout=MS&retention=N&readers=N]"
    ) { configuration in
        let options = try SQLiteOptions(configuration)
        guard !configuration.location.isEmpty else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.string)\": sqlite: needs a file path, as in sqlite:./app.sqlite")
        }
        return try SQLiteBackend(path: configuration.location, options: options)
    }
}
