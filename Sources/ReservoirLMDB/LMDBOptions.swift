import Foundation
import Reservoir

/// The options of an `lmdb:` configuration string, with their defaults.
///
///     lmdb:./app.lmdb?durability=full&mapsize=1GiB&maxreaders=252
public struct LMDBOptions: Sendable, Hashable {
    /// How hard each commit pushes data to disk.
    public enum Durability: String, Sendable, Hashable, CaseIterable {
        /// `MDB_NOSYNC`: no flush on commit. A killed process loses nothing (the data is
        /// in the OS page cache); an OS crash or power loss may lose recent commits and,
        /// on file systems that reorder writes, damage the environment.
        case none
        /// `MDB_NOMETASYNC` (the default): data pages are flushed on every commit, the
        /// meta page is not. A killed process loses nothing; an OS crash or power loss
        /// may undo the last commit but never damages the environment.
        case normal
        /// Data and meta page flushed on every commit: a commit that returned survives
        /// power loss.
        case full
    }

    public var durability: Durability = .normal
    /// The initial map size in bytes; the map grows by doubling when it fills.
    public var mapSize: Int = 64 << 20
    /// The map never grows beyond this; a write that needs more fails with `.full`.
    public var maxMapSize: Int = 1 << 40
    /// Reader slots (concurrent read transactions across all processes).
    public var maxReaders: Int = 126
    /// Named databases: one per entity, one per index, plus two.
    public var maxDatabases: Int = 256
    /// How many change sets the change log keeps for other processes to catch up on.
    public var logRetention: Int = 10_000

    public init() {}

    /// The largest map size accepted: 64 TiB, half of what x86-64 and arm64 Linux give a
    /// process's address space. Sizes near `Int.max` would overflow rounding to a page.
    public static let largestMapSize = 1 << 46

    /// The option names `lmdb:` accepts.
    public static let names = ["durability", "mapsize", "maxmapsize", "maxreaders", "maxdbs", "logretention"]

    /// Reads the options of `configuration`; throws `.invalidConfiguration` naming a bad one.
    public init(_ configuration: StoreConfiguration) throws {
        try configuration.checkOptions(allowed: Self.names)
        func bad(_ key: String, _ expected: String) -> ReservoirError {
            ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.string)\": option \(key)=\(configuration.options[key] ?? "") is not valid; expected \(expected)")
        }
        let options = configuration.options
        if let text = options["durability"] {
            guard let value = Durability(rawValue: text.lowercased()) else { throw bad("durability", "none, normal or full") }
            durability = value
        }
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
        if let text = options["logretention"] {
            guard let value = Int(text), value >= 1 else { throw bad("logretention", "a count of change sets, 1 or more") }
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
