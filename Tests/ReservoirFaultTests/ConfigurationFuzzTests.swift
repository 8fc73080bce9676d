import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite
import Testing

/// Random configuration strings never crash `Store.open`: each opens a store or throws a
/// `ReservoirError` whose message is one line. Every location lies under a temporary
/// directory. `RESERVOIR_FUZZ_ITERATIONS` sets the count (10,000 by default).
@Suite("Configuration strings: random ones never crash")
struct ConfigurationFuzzTests {
    static let count = ProcessInfo.processInfo.environment["RESERVOIR_FUZZ_ITERATIONS"].flatMap { Int($0) } ?? 10_000

    static let schemes = ["memory", "sqlite", "lmdb", "SQLite", "LMDB", "", "postgres", "x-y+z.1", "1abc", "sql ite", "mémoire"]
    static let options = ["durability", "mapsize", "maxmapsize", "maxreaders", "maxdbs", "logretention", "retention",
                          "busytimeout", "readers", "DURABILITY", "", "unknown"]
    static let values = ["", "none", "normal", "full", "FULL", "0", "1", "-1", "5", "64KiB", "1TiB", "65TiB", "9223372036854775807",
                         "9223372036854775808", "99999999999999999999", "1e9", "0x10", " 7", "7 ", "GiB", "\u{0}", "\n", "é", "=", "&"]
    static let pieces = ["a", "b", "..", ".", "/", "//", " ", "\t", "\n", "\u{0}", "\u{1B}", "?", "&", "=", ":", "%20", "é", "e\u{301}",
                         "\u{FFFD}", "\u{1F642}", "\u{2028}", "#", "*", "~", "$HOME", "\\"]

    @Test func randomConfigurationsOpenOrThrowCleanly() throws {
        let temporary = try TemporaryDirectory("reservoir-config-fuzz")
        defer { temporary.cleanUp() }
        let directory = temporary.path
        let registry = BackendRegistry([.sqlite, .lmdb])
        var g = SeededGenerator(seed: 0xC0F1_6000)
        var opened = 0
        var refused: [ReservoirError.Code: Int] = [:]
        for index in 0..<Self.count {
            let configuration = Self.random(&g, directory: directory, index: index)
            do {
                let store = try Store.open(configuration, registry: registry)
                opened += 1
                store.close()
            } catch let error as ReservoirError {
                refused[error.code, default: 0] += 1
                #expect(!error.message.contains("\n") && !error.message.contains("\u{0}"), "\(configuration.debugDescription): \(error.message.debugDescription)")
            } catch {
                Issue.record("\(configuration.debugDescription) threw \(type(of: error)), not a ReservoirError: \(error)")
            }
        }
        print("configuration fuzz: \(Self.count) strings, \(opened) opened, refused: \(refused.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        #expect(opened > 0 && refused.values.reduce(0, +) > 0)
    }

    static func random(_ g: inout SeededGenerator, directory: String, index: Int) -> String {
        func pick(_ list: [String]) -> String { list[Int(g.next() % UInt64(list.count))] }
        var text = pick(schemes)
        if g.next() % 10 != 0 { text += ":" }
        // Locations stay inside the temporary directory; only memory's may be empty.
        if g.next() % 8 != 0 {
            text += directory + "/\(index)-"
            for _ in 0..<(g.next() % 4) { text += pick(pieces) }
            if g.next() % 2 == 0 { text += "/" + pick(["db.sqlite", "env", "a/b", ""]) }
        }
        if g.next() % 3 != 0 {
            text += "?"
            for part in 0..<(g.next() % 4) {
                if part > 0 { text += pick(["&", "&&", "?", ""]) }
                text += pick(options)
                if g.next() % 8 != 0 { text += "=" + pick(values) }
            }
        }
        if g.next() % 12 == 0 { text = pick(pieces) + text }
        return text
    }
}
