import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

/// The log records stores of formats 1 and 2 hold, which this library still reads; the
/// record it writes is the core's (`ChangeLogCodecTests`).
@Suite struct ChangeLogRecordTests {
    /// Version 2, as format 2 stores hold it: groups like version 3, ids as row values.
    static let versionTwo: [UInt8] = [
        2, 2,
        0, 1, UInt8(ascii: "a"), 2, 1, 2, 1, 0x81, 0x01,  // inserted a: 1, -65 (tag 1, zigzag varint)
        2, 1, UInt8(ascii: "b"), 1, 3, 1, UInt8(ascii: "x"),  // deleted b: "x"
    ]

    @Test func readsTheFirstVersionStoresStillHold() {
        // Version 1: count, then per entry kind, entity, id (tag 1: integer, zigzag varint).
        let bytes: [UInt8] = [1, 2, 0, 1, UInt8(ascii: "a"), 1, 10, 2, 1, UInt8(ascii: "b"), 1, 3]
        let decoded = bytes.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 5) }
        #expect(decoded == [
            ChangeLogEntry(sequence: 5, entity: "a", id: .integer(5), kind: .inserted),
            ChangeLogEntry(sequence: 5, entity: "b", id: .integer(-2), kind: .deleted),
        ])
    }

    @Test func readsTheSecondVersionStoresStillHold() {
        let decoded = Self.versionTwo.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 6) }
        #expect(decoded == [
            ChangeLogEntry(sequence: 6, entity: "a", id: .integer(1), kind: .inserted),
            ChangeLogEntry(sequence: 6, entity: "a", id: .integer(-65), kind: .inserted),
            ChangeLogEntry(sequence: 6, entity: "b", id: .text("x"), kind: .deleted),
        ])
        for cut in 0..<Self.versionTwo.count {
            #expect(Array(Self.versionTwo[0..<cut]).withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 6) } == nil, "cut at \(cut)")
        }
    }

    @Test func readsTheRecordThisLibraryWrites() throws {
        let changeSet = ChangeSet(sequence: 3, entities: [EntityChanges(entity: "n", deleted: [.integer(1), .text("t")])])
        let bytes = [UInt8](unsafeUninitializedCapacity: ChangeLogCodec.recordSize(changeSet)) { buffer, initialized in
            initialized = buffer.baseAddress.map { ChangeLogCodec.writeRecord(changeSet, to: $0) } ?? 0
        }
        #expect(bytes.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 3) } == changeSet.logEntries)
        for version: UInt8 in [0, 5] {
            var wrong = bytes
            wrong[0] = version
            #expect(wrong.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 3) } == nil)
        }
    }
}

/// A store written by the previous format (2, version 2 log records) opens, upgrades to
/// format 4, and its existing log reads as before, beside records written after.
@Suite struct OldFormatLogTests {
    private static func zigzagVarint(_ value: Int64) -> [UInt8] {
        var rest = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        var bytes: [UInt8] = []
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        return bytes + [UInt8(rest)]
    }

    /// A version 2 record of one group: kind, entity, integer ids.
    private static func versionTwoRecord(_ kind: UInt8, _ entity: String, _ ids: [Int64]) -> [UInt8] {
        [2, 1, kind, UInt8(entity.utf8.count)] + Array(entity.utf8) + [UInt8(ids.count)] + ids.flatMap { [1] + zigzagVarint($0) }
    }

    @Test func aFormatTwoStoresLogReadsAfterTheUpgrade() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        let entity = Note.schema.entity.name
        do {
            let store = try openStore("lmdb:\(path)")
            defer { store.close() }
            try store.write { tx in
                try tx.insert(Note(id: 1, title: "one"))
                try tx.insert(Note(id: 300, title: "three hundred"))
            }
            try store.write { tx in try tx.delete(Note.self, id: 300) }
            // Rewritten as the previous format stores them: version 2 records, format 2.
            let backend = try #require(store.backend as? LMDBBackend)
            try backend.write { tx in
                let t = try #require(tx as? LMDBTransaction)
                let log = try #require(try t.database(StoreFormat.logDatabase))
                try t.put(log, StoreFormat.bigEndian(1), Self.versionTwoRecord(0, entity, [1, 300]))
                try t.put(log, StoreFormat.bigEndian(2), Self.versionTwoRecord(2, entity, [300]))
                let meta = try #require(try t.database(StoreFormat.metaDatabase))
                try t.put(meta, StoreFormat.formatKey, [0, 0, 0, 2])
            }
        }
        let store = try openStore("lmdb:\(path)")
        defer { store.close() }
        try store.write { tx in try tx.insert(Note(id: 7, title: "new")) }
        let backend = try #require(store.backend as? LMDBBackend)
        let (format, entries) = try backend.read { tx in
            let t = try #require(tx as? LMDBTransaction)
            let meta = try #require(try t.database(StoreFormat.metaDatabase))
            let format = try #require(try t.get(meta, StoreFormat.formatKey)).map { $0 }
            return (format, try tx.changeLog(after: 0, limit: 10))
        }
        #expect(format == [0, 0, 0, 4])
        // Change sets logged before identities have none (0); the new one has its own.
        #expect(entries.prefix(3).allSatisfy { $0.commit == 0 })
        #expect(entries.last.map { $0.commit != 0 } == true)
        #expect(entries.map { ChangeLogEntry(sequence: $0.sequence, entity: $0.entity, id: $0.id, kind: $0.kind) } == [
            ChangeLogEntry(sequence: 1, entity: entity, id: .integer(1), kind: .inserted),
            ChangeLogEntry(sequence: 1, entity: entity, id: .integer(300), kind: .inserted),
            ChangeLogEntry(sequence: 2, entity: entity, id: .integer(300), kind: .deleted),
            ChangeLogEntry(sequence: 3, entity: entity, id: .integer(7), kind: .inserted),
        ])
    }
}
