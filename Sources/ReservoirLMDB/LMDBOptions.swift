import Foundation
import Reservoir

/// The options of an `lmdb:` configuration string, with their defaults.
///
///     lmdb:./app.lmdb?durability=full&mapsize=1GiB&maxreaders=252
public struct LMDBOptions: Sendable, Hashable {
    /// How hard each commit pushes data to disk (``Reservoir/Durability``): `none` is
    /// `MDB_NOSYNC` (no flush; an OS crash may lose recent commits and, on file systems that
    /// reorder writes, damage the environment); `normal`, the default, is `MDB_NOMETASYNC`
    /// (data pages flushed, the meta page not: a crash may undo the last commit, never
    /// damage); `full` flushes both, so a commit that returned survives power loss.
    public typealias Durability = Reservoir.Durability

    public var durability: Durability = .normal
    /// The initial map size in bytes; the map grows by doubling when it fills.
    public var mapSize: Int = 64 << 20
    /// The map never grows beyond this; a write that needs more fails with `.full`.
    public var maxMapSize: Int = 1 << 40
    /// Reader slots (concurrent read transactions across all processes).
    public var maxReaders: Int = 126
    /// Named databases: one per entity, one per index, plus two.
    public var maxDatabases: Int = 256
    /// What the change log keeps for other processes and history readers: `retention=`
    /// (`logretention=` is its old name), `retentionage=`, `holdage=` (``HistoryRetention``).
    public var history = HistoryRetention(count: 10_000)
    /// How many change sets the change log keeps at least (0: no count).
    public var logRetention: Int {
        get { history.count }
        set { history.count = max(0, newValue) }
    }
    /// `mode=readonly`: open for reading and observing only (`MDB_RDONLY`); writes throw
    /// `.readOnly`. An environment whose directory or data.mdb this process may not write
    /// opens read-only by itself.
    public var readOnly = false

    public init() {}

    /// The largest map size accepted: 64 TiB, half of what x86-64 and arm64 Linux give a
    /// process's address space. Sizes near `Int.max` would overflow rounding to a page.
    public static let largestMapSize = 1 << 46

    /// The option names `lmdb:` accepts.
    public static let names = ["durability", "mapsize", "maxmapsize", "maxreaders", "maxdbs", "mode", "logretention"] + StoreConfiguration.historyOptionNames

    /// Reads the options of `configuration`; throws `.invalidConfiguration` naming a bad one.
    public init(_ configuration: StoreConfiguration) throws {
        try configuration.checkOptions(allowed: Self.names)
        func bad(_ key: String, _ expected: String) -> ReservoirError {
            configuration.invalidOption(key, expected: expected)
        }
        let options = configuration.options
        durability = try configuration.durability(accepting: [.none, .normal, .full], default: durability)
        if let text = options["mapsize"] {
            guard let value = Self.parseSize(text), value > 0, value <= Self.largestMapSize else {
                throw bad("mapsize", "a size in bytes from 1 to 64TiB, such as 65536, 64KiB, 256MiB or 2GiB")
            }
            mapSize = value
        }
        if let text = options["maxmapsize"] {
            guard let value = Self.parseSize(text), value > 0, value <= Self.largestMapSize else {
                throw bad("maxmapsize", "a size in bytes from 1 to 64TiB, such as 64MiB or 1TiB")
            }
            maxMapSize = value
        }
        if let text = options["maxreaders"] {
            guard let value = Int(text), (1...100_000).contains(value) else { throw bad("maxreaders", "a count from 1 to 100000") }
            maxReaders = value
        }
        if let text = options["maxdbs"] {
            guard let value = Int(text), (4...32_000).contains(value) else { throw bad("maxdbs", "a count from 4 to 32000") }
            maxDatabases = value
        }
        history = try configuration.historyRetention(defaultCount: logRetention)
        readOnly = try configuration.readOnly()
        if let text = options["logretention"] {
            guard options["retention"] == nil else { throw bad("logretention", "no value: it is the old name of retention, which is given too") }
            guard let value = Int(text), value >= 1 else { throw bad("logretention", "a count of change sets, 1 or more (retention=0 keeps all)") }
            logRetention = value
        }
        if options["maxmapsize"] == nil, mapSize > maxMapSize {
            maxMapSize = mapSize
        }
        if options["mapsize"] == nil, mapSize > maxMapSize {
            mapSize = maxMapSize
        }
        if mapSize > maxMapSize {
            throw bad("mapsize", "at most maxmapsize (\(maxMapSize) bytes)")
        }
    }

    /// `65536`, `64KiB`, `64K`, `256MiB`, `256MB`, `2GiB`, `1TiB` (units are binary).
    static func parseSize(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int(digits) else { return nil }
        let unit = trimmed.dropFirst(digits.count).lowercased()
        let shift: Int
        switch unit {
        case "", "b": shift = 0
        case "k", "kb", "kib": shift = 10
        case "m", "mb", "mib": shift = 20
        case "g", "gb", "gib": shift = 30
        case "t", "tb", "tib": shift = 40
        default: return nil
        }
        let (value, overflow) = number.multipliedReportingOverflow(by: 1 << shift)
        return overflow ? nil : value
    }
}
