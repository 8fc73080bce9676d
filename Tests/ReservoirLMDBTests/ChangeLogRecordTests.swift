import Foundation
import Reservoir
import Testing
@testable import ReservoirLMDB

@Suite struct ChangeLogRecordTests {
    private static func record(_ changeSet: ChangeSet) -> [UInt8] {
        let size = StoreFormat.logRecordSize(changeSet)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = buffer.baseAddress.map { StoreFormat.writeLogRecord(changeSet, to: $0) } ?? 0
        }
    }

    private static let mixed = ChangeSet(sequence: 42, entities: [
        EntityChanges(entity: "notes",
                      inserted: [RowChange(id: .integer(1), row: Row([("id", 1)])), RowChange(id: .integer(-300), row: Row([("id", -300)]))],
                      deleted: [.integer(7)]),
        EntityChanges(entity: "tägs", updated: [RowChange(id: .text("é😀"), row: Row([("id", "é😀")]))],
                      deleted: [.text(""), .real(2.5), .blob(Data([0, 255])), .null]),
    ])

    @Test func groupsEntriesByEntityAndKind() throws {
        let bytes = Self.record(Self.mixed)
        #expect(bytes.count == StoreFormat.logRecordSize(Self.mixed))
        #expect(bytes.first == 2)
        let decoded = try #require(bytes.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 42) })
        let expected = Self.mixed.logEntries
        #expect(decoded == expected)
        #expect(expected.count == 8)
    }

    @Test func readsTheFirstVersionStoresStillHold() {
        // Version 1: count, then per entry kind, entity, id (tag 1: integer, zigzag varint).
        let bytes: [UInt8] = [1, 2, 0, 1, UInt8(ascii: "a"), 1, 10, 2, 1, UInt8(ascii: "b"), 1, 3]
        let decoded = bytes.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 5) }
        #expect(decoded == [
            ChangeLogEntry(sequence: 5, entity: "a", id: .integer(5), kind: .inserted),
            ChangeLogEntry(sequence: 5, entity: "b", id: .integer(-2), kind: .deleted),
        ])
    }

    @Test func rejectsDamagedRecords() {
        let bytes = Self.record(Self.mixed)
        for cut in 0..<bytes.count {
            #expect(Array(bytes[0..<cut]).withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 42) } == nil, "cut at \(cut)")
        }
        #expect((bytes + [0]).withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 42) } == nil)
        for version: UInt8 in [0, 3] {
            var wrong = bytes
            wrong[0] = version
            #expect(wrong.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 42) } == nil)
        }
        var badKind = bytes
        badKind[2] = 3
        #expect(badKind.withUnsafeBytes { StoreFormat.decodeEntries($0, sequence: 42) } == nil)
    }
}
