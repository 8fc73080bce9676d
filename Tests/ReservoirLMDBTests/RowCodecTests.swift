import Foundation
import Reservoir
import Testing
@testable import ReservoirLMDB

extension RowCodec {
    /// `row` encoded in `layout`, as the backend writes it into LMDB's reserved page.
    static func encode(_ row: Row, layout: UInt32) -> [UInt8] {
        let size = encodedSize(row, layout: layout)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            initialized = write(row, layout: layout, to: base)
        }
    }
}

/// The layouts a test's rows are written in, looked up by number as a transaction would.
struct TestLayouts {
    var layouts: [RowLayout] = []

    /// The number of the layout with `columns`, added when new.
    mutating func number(_ columns: [String]) -> UInt32 {
        if let known = layouts.first(where: { $0.columns == columns }) { return known.number }
        layouts.append(RowLayout(number: UInt32(layouts.count * 3 + 1), columns: columns))
        return layouts[layouts.count - 1].number
    }

    func encode(_ row: Row) -> [UInt8] {
        var copy = self
        return RowCodec.encode(row, layout: copy.number(row.columns))
    }

    func lookup(_ number: UInt32) -> RowLayout? { layouts.first { $0.number == number } }
}

/// A version 1 row, as earlier versions of the library wrote it: each column's name spelled
/// out before its value. Built by hand, so the reader is checked against the format itself.
func namedRowBytes(_ row: Row) -> [UInt8] {
    var out = ByteWriter()
    out.bytes.append(1)
    out.varint(UInt64(row.count))
    for (column, value) in row {
        out.string(column)
        let size = RowCodec.valueSize(value)
        var encoded = [UInt8](repeating: 0, count: size)
        encoded.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var writer = RawWriter(base: base)
            writer.value(value)
        }
        out.bytes.append(contentsOf: encoded)
    }
    return out.bytes
}

@Suite struct RowCodecTests {
    static let everyKind = Row(columns: ["id", "i", "neg", "r", "t", "b", "n", "nan", "empty"],
                               values: [.integer(1), .integer(.max), .integer(.min), .real(-0.0), .text("é\u{0}😀"),
                                        .blob(Data([0, 255])), .null, .real(.nan), .text("")])

    @Test func roundTripsEveryValueKind() throws {
        var layouts = TestLayouts()
        let number = layouts.number(Self.everyKind.columns)
        let bytes = RowCodec.encode(Self.everyKind, layout: number)
        #expect(bytes.first == RowCodec.version)
        #expect(bytes.withUnsafeBytes { RowCodec.header($0)?.layout } == number)
        var reader = StoredRowDecoder()
        let decoded = bytes.withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) }
        #expect(decoded == Self.everyKind)
        #expect(decoded?.columns == Self.everyKind.columns)
        // No column name is stored: the row is its values and a two-byte header.
        let valueBytes = Self.everyKind.values.reduce(0) { $0 + RowCodec.valueSize($1) }
        #expect(bytes.count == 2 + valueBytes)
    }

    @Test func readsVersionOneRows() {
        var reader = StoredRowDecoder()
        let decoded = namedRowBytes(Self.everyKind).withUnsafeBytes { reader.decode($0, renames: nil) { _ in nil } }
        #expect(decoded == Self.everyKind)
        #expect(decoded?.columns == Self.everyKind.columns)
    }

    @Test func rejectsDamagedBytes() {
        let row = Row(columns: ["id", "t"], values: [.integer(1), .text("hello")])
        var layouts = TestLayouts()
        _ = layouts.number(row.columns)
        for bytes in [layouts.encode(row), namedRowBytes(row)] {
            var reader = StoredRowDecoder()
            for cut in 0..<bytes.count {
                let truncated = Array(bytes[0..<cut])
                #expect(truncated.withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) } == nil, "cut at \(cut)")
            }
            var wrongVersion = bytes
            wrongVersion[0] = 9
            #expect(wrongVersion.withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) } == nil)
            #expect((bytes + [0]).withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) } == nil)
            #expect(bytes.withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) } == row)
        }
        // A layout nobody stored, and a layout with more columns than the row has values.
        var reader = StoredRowDecoder()
        let unknown = RowCodec.encode(row, layout: 99)
        #expect(unknown.withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) } == nil)
        let wider = layouts.number(["id", "t", "extra"])
        let short = RowCodec.encode(row, layout: wider)
        #expect(short.withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) } == nil)
    }

    /// One reader across rows of several layouts and both versions (as a scan over rows
    /// written by several versions of a type, and of the library, sees them).
    @Test func oneReaderAcrossLayoutsAndVersions() {
        let rows = [
            Row(columns: ["id", "a", "b"], values: [.integer(1), .text("x"), .null]),
            Row(columns: ["id", "a", "b"], values: [.integer(2), .text("y"), .real(1)]),
            Row(columns: ["id", "b", "a"], values: [.integer(3), .real(2), .text("z")]),
            Row(columns: ["id", "a", "c"], values: [.integer(4), .text("w"), .blob(Data([1]))]),
            Row(columns: ["id"], values: [.integer(5)]),
            Row(columns: [], values: []),
            Row(columns: ["id", "a", "b"], values: [.integer(6), .text("v"), .null]),
        ]
        var layouts = TestLayouts()
        for row in rows { _ = layouts.number(row.columns) }
        var reader = StoredRowDecoder()
        for (position, row) in (rows + rows.reversed()).enumerated() {
            let bytes = position % 3 == 2 ? namedRowBytes(row) : layouts.encode(row)
            let decoded = bytes.withUnsafeBytes { reader.decode($0, renames: nil, layouts: layouts.lookup) }
            #expect(decoded == row)
            #expect(decoded?.columns == row.columns)
        }
    }

    /// Refilling one row in place: what a fetch does per stored row. A row that does not
    /// hold the layout's columns must be rebuilt, not overwritten, even at the same count;
    /// a copy kept by the caller never changes.
    @Test func decodingIntoARowRefillsItOnlyWhenItHoldsTheLayoutsColumns() {
        let ab = Row(columns: ["id", "a", "b"], values: [.integer(1), .text("x"), .null])
        let ac = Row(columns: ["id", "a", "c"], values: [.integer(2), .text("long enough to live on the heap"), .blob(Data([1]))])
        let ab2 = Row(columns: ["id", "a", "b"], values: [.integer(3), .text("y"), .real(1)])
        var layouts = TestLayouts()
        _ = layouts.number(ab.columns)
        _ = layouts.number(ac.columns)
        var reader = StoredRowDecoder()
        var row = Row()
        var kept: [Row] = []
        for expected in [ab, ab2, ac, ab, ab2] {
            #expect(layouts.encode(expected).withUnsafeBytes { reader.decode($0, into: &row, renames: nil, layouts: layouts.lookup) })
            #expect(row == expected)
            #expect(row.columns == expected.columns)
            kept.append(row)
        }
        #expect(kept == [ab, ab2, ac, ab, ab2])
        // A row built elsewhere with the same count of columns.
        var stranger = Row(columns: ["id", "a", "b"], values: [.integer(9), .text("z"), .null])
        #expect(layouts.encode(ac).withUnsafeBytes { reader.decode($0, into: &stranger, renames: nil, layouts: layouts.lookup) })
        #expect(stranger.columns == ac.columns)
        #expect(stranger == ac)
        var damaged = layouts.encode(ab)
        damaged.removeLast()
        #expect(!damaged.withUnsafeBytes { reader.decode($0, into: &row, renames: nil, layouts: layouts.lookup) })
    }

    @Test func readsOneColumnWithoutDecodingTheRest() {
        let row = Row(columns: ["id", "t", "b", "r"], values: [.integer(7), .text("abc"), .blob(Data([1, 2])), .real(2.5)])
        let other = Row(columns: ["r", "id"], values: [.real(-1), .integer(8)])
        var layouts = TestLayouts()
        _ = layouts.number(row.columns)
        _ = layouts.number(other.columns)
        // One reader per column across alternating layouts and versions, as sorting reads them.
        let stored = [layouts.encode(row), layouts.encode(other), namedRowBytes(row), layouts.encode(row), namedRowBytes(other)]
        let expected: [String: [Value]] = [
            "id": [.integer(7), .integer(8), .integer(7), .integer(7), .integer(8)],
            "r": [.real(2.5), .real(-1), .real(2.5), .real(2.5), .real(-1)],
            "b": [.blob(Data([1, 2])), .null, .blob(Data([1, 2])), .blob(Data([1, 2])), .null],
            "missing": [.null, .null, .null, .null, .null],
        ]
        for (column, values) in expected {
            var reader = FieldReader(column: column)
            let read = stored.map { bytes in bytes.withUnsafeBytes { reader.field(in: $0, layouts: layouts.lookup)?.value } }
            #expect(read == values, "\(column)")
        }
        for bytes in [layouts.encode(row), namedRowBytes(row)] {
            var reader = FieldReader(column: "r")
            let truncated = Array(bytes.dropLast())
            #expect(truncated.withUnsafeBytes { reader.field(in: $0, layouts: layouts.lookup) } == nil)
        }
        var reader = FieldReader(column: "id")
        #expect(RowCodec.encode(row, layout: 99).withUnsafeBytes { reader.field(in: $0, layouts: layouts.lookup) } == nil)
    }

    /// Text read as a field stays bytes, but must be UTF-8 all the same: sorting on a column
    /// rejects a row that decoding it would reject.
    @Test func textFieldsAreCheckedUTF8() {
        var layouts = TestLayouts()
        _ = layouts.number(["id", "t"])
        for text in ["abc", "é😀", String(repeating: "long ascii ", count: 3)] {
            let row = Row(columns: ["id", "t"], values: [.integer(1), .text(text)])
            for bytes in [layouts.encode(row), namedRowBytes(row)] {
                var reader = FieldReader(column: "t")
                #expect(bytes.withUnsafeBytes { reader.field(in: $0, layouts: layouts.lookup) }?.value == .text(text))
                var damaged = bytes
                damaged[damaged.count - 1] = 0xFF
                #expect(damaged.withUnsafeBytes { reader.field(in: $0, layouts: layouts.lookup) } == nil, "\(text)")
            }
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
