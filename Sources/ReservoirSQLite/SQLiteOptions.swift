import Reservoir

/// Settings of a ``SQLiteBackend``, from the options of a `sqlite:` configuration string.
///
///     sqlite:./app.sqlite?durability=full&busytimeout=10000&retention=50000&readers=8
public struct SQLiteOptions: Sendable, Hashable {
    /// How much a committed transaction survives: `normal` (the default) or `full` in a
    /// configuration string; `.none` set in code is `synchronous = OFF`. Backends.md § Durability.
    public typealias Durability = Reservoir.Durability

    public var durability: Durability
    /// How long a connection waits for another process's lock before failing with `.busy`.
    public var busyTimeoutMilliseconds: Int32
    /// What the persisted change log keeps: `retention=`, `retentionage=`, `holdage=`
    /// (``HistoryRetention``).
    public var history: HistoryRetention
    /// How many change sets the persisted change log keeps at least (0: no count).
    public var retention: Int {
        get { history.count }
        set { history.count = max(0, newValue) }
    }
    /// How many idle reader connections are kept for reuse.
    public var readers: Int
    /// `mode=readonly`: open for reading and observing only; writes throw `.readOnly`.
    public var readOnly = false

    public init(durability: Durability = .normal, busyTimeoutMilliseconds: Int32 = 5000, retention: Int = 10_000, readers: Int = 4) {
        self.durability = durability
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.history = HistoryRetention(count: retention)
        self.readers = readers
    }

    /// The option names a `sqlite:` configuration string accepts.
    public static let names = ["busytimeout", "durability", "mode", "readers"] + StoreConfiguration.historyOptionNames

    /// Reads the options of `configuration`; throws `.invalidConfiguration` naming an unknown
    /// option or a bad value and what is accepted.
    public init(_ configuration: StoreConfiguration) throws {
        try configuration.checkOptions(allowed: Self.names)
        self.init()
        durability = try configuration.durability(default: durability)
        busyTimeoutMilliseconds = Int32(try configuration.integer(
            "busytimeout", in: 0...Int(Int32.max), default: Int(busyTimeoutMilliseconds), expected: "a number of milliseconds, 0 or more"))
        history = try configuration.historyRetention(defaultCount: retention)
        readers = try configuration.integer("readers", in: 1...64, default: readers, expected: "a number of idle reader connections from 1 to 64")
        readOnly = try configuration.readOnly()
    }
}

extension BackendFactory {
    /// The factory for `sqlite:PATH[?durability=normal|full&busytimeout=MS&retention=N&retentionage=DURATION&holdage=DURATION&readers=N&mode=readonly]`.
    ///
    ///     let registry = BackendRegistry([.sqlite])
    ///     let store = try Store.open("sqlite:./app.sqlite", registry: registry)
    public static let sqlite = BackendFactory(
        scheme: "sqlite",
        summary: "sqlite:PATH[?durability=normal|full&busytimeout=MS&retention=N&retentionage=DURATION&holdage=DURATION&readers=N&mode=readonly]"
    ) { configuration in
        let options = try SQLiteOptions(configuration)
        guard !configuration.location.isEmpty else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.string)\": sqlite: needs a file path, as in sqlite:./app.sqlite")
        }
        return try SQLiteBackend(path: configuration.location, options: options)
    }
}
