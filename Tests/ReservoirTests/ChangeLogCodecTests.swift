import Foundation
import Testing
@testable import Reservoir

@Suite struct ChangeLogCodecTests {
    static func record(_ changeSet: ChangeSet) -> [UInt8] {
        let size = ChangeLogCodec.recordSize(changeSet)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = buffer.baseAddress.map { ChangeLogCodec.writeRecord(changeSet, to: $0) } ?? 0
        }
    }

    static let mixed = ChangeSet(sequence: 42, entities: [
        EntityChanges(entity: "notes",
                      inserted: [RowChange(id: .integer(1), row: Row([("id", 1)])), RowChange(id: .integer(-300), row: Row([("id", -300)]))],
                      deleted: [.integer(7)]),
        EntityChanges(entity: "tägs", updated: [RowChange(id: .text("é😀"), row: Row([("id", "é😀")]))],
                      deleted: [.text(""), .real(2.5), .blob(Data([0, 255])), .null]),
    ], commit: 0x0102_0304_0506_0708)

    @Test func groupsEntriesByEntityAndKind() throws {
        let bytes = Self.record(Self.mixed)
        #expect(bytes.count == ChangeLogCodec.recordSize(Self.mixed))
        #expect(bytes.first == ChangeLogCodec.recordVersion)
        let decoded = try #require(bytes.withUnsafeBytes { ChangeLogCodec.decodeRecord($0, sequence: 42) })
        let expected = Self.mixed.logEntries
        #expect(decoded == expected)
        #expect(expected.count == 8)
        #expect(decoded.allSatisfy { $0.commit == 0x0102_0304_0506_0708 })
        // The identity follows the version byte, little-endian.
        #expect(Array(bytes[1..<9]) == [8, 7, 6, 5, 4, 3, 2, 1])
        #expect(bytes.withUnsafeBytes { ChangeLogCodec.commitIdentity(ofRecord: $0) } == 0x0102_0304_0506_0708)
    }

    /// Version 3 records, written before commits had identities, still read, with identity 0.
    @Test func readsVersionThreeRecordsWithoutIdentity() throws {
        var bytes = Self.record(Self.mixed)
        bytes.removeSubrange(1..<9)
        bytes[0] = 3
        let decoded = try #require(bytes.withUnsafeBytes { ChangeLogCodec.decodeRecord($0, sequence: 42) })
        #expect(decoded == ChangeSet(sequence: 42, entities: Self.mixed.entities).logEntries)
        #expect(decoded.allSatisfy { $0.commit == 0 })
        #expect(bytes.withUnsafeBytes { ChangeLogCodec.commitIdentity(ofRecord: $0) } == 0)
    }

    /// A record's groups hold their ids as SQLite's and PostgreSQL's `ids` columns do, but
    /// integers in the compact form, which unpacking reads too.
    @Test func groupIDsArePackedIDs() throws {
        var groups: [(String, ChangeType, Data)] = []
        ChangeLogCodec.forEachGroup(Self.mixed) { entity, kind, ids in groups.append((entity, kind, PackedIDs.pack(ids))) }
        #expect(groups.map(\.0) == ["notes", "notes", "tägs", "tägs"])
        #expect(groups.map(\.1) == [.inserted, .deleted, .updated, .deleted])
        #expect(PackedIDs.unpack(groups[0].2) == [.integer(1), .integer(-300)])
        #expect(PackedIDs.unpack(groups[3].2) == [.text(""), .real(2.5), .blob(Data([0, 255])), .null])
        #expect(groups[0].2 == PackedIDs.pack([Value.integer(1), .integer(-300)]))
        let bytes = Self.record(Self.mixed)
        let tail = Data(bytes.suffix(groups[3].2.count))
        #expect(tail == groups[3].2)
        // inserted notes 1, -300: tag 5 and zigzag varints (2 → 02, 599 → D7 04).
        let inserted: [UInt8] = [0, 5] + Array("notes".utf8) + [2, 5, 2, 5, 0xD7, 0x04]
        #expect(bytes[10..<(10 + inserted.count)].elementsEqual(inserted))
        let compact = Data([5, 0x02, 5, 0xD7, 0x04, 5, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        #expect(PackedIDs.unpack(compact) == [.integer(1), .integer(-300), .integer(.min)])
        #expect(PackedIDs.unpack(compact.prefix(7)) == nil)
    }

    @Test func rejectsDamagedRecords() {
        let bytes = Self.record(Self.mixed)
        for cut in 0..<bytes.count {
            #expect(Array(bytes[0..<cut]).withUnsafeBytes { ChangeLogCodec.decodeRecord($0, sequence: 42) } == nil, "cut at \(cut)")
        }
        #expect((bytes + [0]).withUnsafeBytes { ChangeLogCodec.decodeRecord($0, sequence: 42) } == nil)
        for version: UInt8 in [0, 2, 5] {
            var wrong = bytes
            wrong[0] = version
            #expect(wrong.withUnsafeBytes { ChangeLogCodec.decodeRecord($0, sequence: 42) } == nil, "version \(version)")
        }
        var badKind = bytes
        badKind[10] = 3
        #expect(badKind.withUnsafeBytes { ChangeLogCodec.decodeRecord($0, sequence: 42) } == nil)
    }
}
