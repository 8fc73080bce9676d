import Foundation
import Reservoir
import Testing
@testable import ReservoirLMDB

@Suite struct RowCodecTests {
    @Test func roundTripsEveryValueKind() {
        let row = Row(columns: ["id", "i", "neg", "r", "t", "b", "n", "nan", "empty"],
                      values: [.integer(1), .integer(.max), .integer(.min), .real(-0.0), .text("é\u{0}😀"),
                               .blob(Data([0, 255])), .null, .real(.nan), .text("")])
        let bytes = RowCodec.encode(row)
        #expect(bytes.first == RowCodec.version)
        var names = ColumnNameCache()
        let decoded = bytes.withUnsafeBytes { RowCodec.decode($0, names: &names) }
        #expect(decoded == row)
    }

    @Test func rejectsDamagedBytes() {
        let bytes = RowCodec.encode(Row(columns: ["id", "t"], values: [.integer(1), .text("hello")]))
        var names = ColumnNameCache()
        for cut in 0..<bytes.count {
            let truncated = Array(bytes[0..<cut])
            #expect(truncated.withUnsafeBytes { RowCodec.decode($0, names: &names) } == nil, "cut at \(cut)")
        }
        var wrongVersion = bytes
        wrongVersion[0] = 9
        #expect(wrongVersion.withUnsafeBytes { RowCodec.decode($0, names: &names) } == nil)
        #expect((bytes + [0]).withUnsafeBytes { RowCodec.decode($0, names: &names) } == nil)
    }

    /// One name cache across rows whose column lists differ (as a scan over rows written by
    /// several versions of a type sees them).
    @Test func sharedNameCacheAcrossDifferentColumnLists() {
        let rows = [
            Row(columns: ["id", "a", "b"], values: [.integer(1), .text("x"), .null]),
            Row(columns: ["id", "a", "b"], values: [.integer(2), .text("y"), .real(1)]),
            Row(columns: ["id", "b", "a"], values: [.integer(3), .real(2), .text("z")]),
            Row(columns: ["id", "a", "c"], values: [.integer(4), .text("w"), .blob(Data([1]))]),
            Row(columns: ["id"], values: [.integer(5)]),
            Row(columns: [], values: []),
            Row(columns: ["id", "a", "b"], values: [.integer(6), .text("v"), .null]),
        ]
        var names = ColumnNameCache()
        for row in rows + rows.reversed() {
            let decoded = RowCodec.encode(row).withUnsafeBytes { RowCodec.decode($0, names: &names) }
            #expect(decoded == row)
            #expect(decoded?.columns == row.columns)
        }
    }

    /// Refilling one row in place: what a fetch does per stored row. A row that does not
    /// hold the cache's last layout must be rebuilt, not overwritten, even at the same count;
    /// a copy kept by the caller never changes.
    @Test func decodingIntoARowRefillsItOnlyWhenItHoldsTheLastLayout() {
        let ab = Row(columns: ["id", "a", "b"], values: [.integer(1), .text("x"), .null])
        let ac = Row(columns: ["id", "a", "c"], values: [.integer(2), .text("long enough to live on the heap"), .blob(Data([1]))])
        let ab2 = Row(columns: ["id", "a", "b"], values: [.integer(3), .text("y"), .real(1)])
        var names = ColumnNameCache()
        var row = Row()
        var kept: [Row] = []
        for expected in [ab, ab2, ac, ab, ab2] {
            #expect(RowCodec.encode(expected).withUnsafeBytes { RowCodec.decode($0, into: &row, names: &names) })
            #expect(row == expected)
            #expect(row.columns == expected.columns)
            kept.append(row)
        }
        #expect(kept == [ab, ab2, ac, ab, ab2])
        // A row decoded with another cache, while this cache last saw the other layout.
        var stranger = Row(columns: ["id", "a", "b"], values: [.integer(9), .text("z"), .null])
        #expect(RowCodec.encode(ac).withUnsafeBytes { RowCodec.decode($0, names: &names) } == ac)
        #expect(RowCodec.encode(ac).withUnsafeBytes { RowCodec.decode($0, into: &stranger, names: &names) })
        #expect(stranger.columns == ac.columns)
        #expect(stranger == ac)
        var damaged = RowCodec.encode(ab)
        damaged.removeLast()
        #expect(!damaged.withUnsafeBytes { RowCodec.decode($0, into: &row, names: &names) })
    }

    @Test func readsOneColumnWithoutDecodingTheRest() {
        let row = Row(columns: ["id", "t", "b", "r"], values: [.integer(7), .text("abc"), .blob(Data([1, 2])), .real(2.5)])
        let bytes = RowCodec.encode(row)
        func value(_ column: String) -> Value? {
            var writer = ByteWriter()
            writer.string(column)
            return writer.bytes.withUnsafeBytes { name in bytes.withUnsafeBytes { RowCodec.field(ofColumn: name, in: $0)?.value } }
        }
        #expect(value("id") == .integer(7))
        #expect(value("r") == .real(2.5))
        #expect(value("b") == .blob(Data([1, 2])))
        #expect(value("missing") == .null)
        let truncated = Array(bytes.dropLast())
        var writer = ByteWriter()
        writer.string("missing")
        #expect(writer.bytes.withUnsafeBytes { name in truncated.withUnsafeBytes { RowCodec.field(ofColumn: name, in: $0)?.value } } == nil)
    }

    /// Text read as a field stays bytes, but must be UTF-8 all the same: sorting on a column
    /// rejects a row that decoding it would reject.
    @Test func textFieldsAreCheckedUTF8() {
        var name = ByteWriter()
        name.string("t")
        for text in ["abc", "é😀", String(repeating: "long ascii ", count: 3)] {
            let bytes = RowCodec.encode(Row(columns: ["id", "t"], values: [.integer(1), .text(text)]))
            let field = name.bytes.withUnsafeBytes { name in bytes.withUnsafeBytes { RowCodec.field(ofColumn: name, in: $0) } }
            #expect(field?.value == .text(text))
            var damaged = bytes
            damaged[damaged.count - 1] = 0xFF
            #expect(name.bytes.withUnsafeBytes { name in damaged.withUnsafeBytes { RowCodec.field(ofColumn: name, in: $0) } } == nil, "\(text)")
        }
    }

    /// Byte comparison with overlapping word loads: every length up to a few words, a
    /// difference at every position, buffers at odd offsets.
    @Test func sameBytesFindsEveryDifference() {
        func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
            guard a.count == b.count else { return false }
            guard let pa = a.baseAddress, let pb = b.baseAddress else { return true }
            return ReservoirLMDB.sameBytes(pa, pb, count: a.count)
        }
        let base: [UInt8] = (0..<48).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for count in 0...40 {
            for shift in [0, 1, 3] {
                let a = base[shift..<(shift + count)]
                #expect(Array(a).withUnsafeBytes { pa in Array(a).withUnsafeBytes { sameBytes(pa, $0) } }, "count \(count)")
                for position in 0..<count {
                    var b = Array(a)
                    b[position] ^= 0x80
                    #expect(!Array(a).withUnsafeBytes { pa in b.withUnsafeBytes { sameBytes(pa, $0) } }, "count \(count), position \(position)")
                }
                var reader = ByteReader(UnsafeRawBufferPointer(start: nil, count: 0))
                var skipped = reader.skip(matching: UnsafeRawBufferPointer(start: nil, count: 0))
                #expect(skipped)
                let longer = Array(a) + [1]
                longer.withUnsafeBytes { bytes in
                    Array(a).withUnsafeBytes { expected in
                        reader = ByteReader(bytes)
                        skipped = reader.skip(matching: expected)
                        #expect(skipped && reader.offset == count, "count \(count)")
                        reader = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[1...]))
                        skipped = reader.skip(matching: expected)
                        #expect(count < 2 || !skipped, "count \(count)")
                    }
                }
            }
        }
    }
}
