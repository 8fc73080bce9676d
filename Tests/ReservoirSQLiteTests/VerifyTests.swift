import Foundation
import Reservoir
import ReservoirConformance
import Testing

/// `verify()` on a SQLite file with a page overwritten reports the damage (from
/// `PRAGMA integrity_check` and the rows that no longer read) instead of throwing.
@Suite struct VerifyTests {
    @Test func anOverwrittenPageIsReportedNotThrown() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore(dir.databasePath)
        try store.write { tx in
            for id in 0..<3000 { try tx.insert(Todo(id: id, title: "todo \(id)", done: id % 2 == 0, priority: id % 7)) }
        }
        #expect(try store.verify().isIntact)
        store.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dir.databasePath)[.size] as? NSNumber).intValue
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: dir.databasePath))
        try handle.seek(toOffset: UInt64(size / 2 / 4096 * 4096))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
        let damaged = try openStore(dir.databasePath)
        defer { damaged.close() }
        let report = try damaged.verify()
        #expect(!report.isIntact, "\(report)")
        #expect(report.problems.contains { $0.contains(dir.databasePath) }, "\(report.problems)")
    }
}
