import Foundation
import Reservoir
import ReservoirConformance
import Testing
@testable import ReservoirLMDB

/// The backend's sort (typed keys, radix passes, byte keys, position as the id tie-break)
/// must give exactly `QueryEvaluator.sorted`'s order, for columns that take each path.
@Suite struct RowSortTests {
    static let integers: [Value] = [.integer(.min), .integer(-1), .integer(0), .integer(1), .integer(255), .integer(256), .integer(1 << 40), .integer(.max)]
    static let reals: [Value] = [.null, .real(.nan), .real(-.infinity), .real(-1e300), .real(-1.5), .real(-0.0), .real(0.0), .real(.leastNonzeroMagnitude), .real(-.leastNonzeroMagnitude), .real(1.5), .real(1e300), .real(.infinity)]
    /// Integers and reals a double holds exactly (the reals' key path).
    static let exactMix: [Value] = reals + [.integer(-(1 << 53)), .integer(-2), .integer(0), .integer(1), .integer(1 << 53)]
    /// Integers beyond 2^53 beside reals: compared as values.
    static let wideMix: [Value] = exactMix + [.integer(1 << 53 + 1), .real(9_007_199_254_740_992.0), .integer(.max)]
    static let anything: [Value] = wideMix + [.text(""), .text("a"), .text("é"), .blob(Data([1]))]
    /// Text and nulls (the byte keys' path): prefixes of one another around the seven-byte
    /// chunks, zero bytes, and UTF-8 whose byte order differs from other orders.
    static let texts: [Value] = [.null, .text(""), .text("\u{0}"), .text("a"), .text("a\u{0}"), .text("ab"), .text("abcdef"), .text("abcdefg"),
                                 .text("abcdefg\u{0}"), .text("abcdefgh"), .text("abcdefgi"), .text("abcdefghijklmn"), .text("abcdefghijklmn\u{0}"),
                                 .text("abcdefghijklmno"), .text("abcdefghijklmnop"), .text("B"), .text("é"), .text("e\u{301}"), .text("\u{7F}"),
                                 .text("\u{FFFD}"), .text("😀"), .text("item 12 x"), .text("item 123"), .text("item 1234 xxxxxxxx")]
    /// Blobs and nulls: also byte keys.
    static let blobs: [Value] = [.null, .blob(Data()), .blob(Data([0])), .blob(Data([0, 0])), .blob(Data([255])), .blob(Data([0x7F, 0x80])),
                                 .blob(Data(repeating: 1, count: 7)), .blob(Data(repeating: 1, count: 8)), .blob(Data(repeating: 1, count: 14)),
                                 .blob(Data(repeating: 1, count: 15)), .blob(Data(repeating: 1, count: 14) + [0])]
    /// Many distinct texts sharing long prefixes: runs that tie over several chunks.
    static let longTexts: [Value] = (0..<60).map { .text("a shared prefix, \($0 % 7) then \(String(repeating: "z", count: $0 % 13))") }
    static let textAndBlob: [Value] = texts + blobs

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func sortsLikeTheReference(seed: UInt64) {
        var g = SeededGenerator(seed: seed)
        let pools = [Self.integers, Self.reals, Self.exactMix, Self.wideMix, Self.anything, Self.texts, Self.blobs, Self.longTexts, Self.textAndBlob]
        for count in [0, 1, 2, 3, 10, 100, 1_000] {
            for _ in 0..<20 {
                let poolA = pools[Int(g.next() % UInt64(pools.count))]
                let poolB = pools[Int(g.next() % UInt64(pools.count))]
                // Few distinct values, so ties (and the id tie-break) are common.
                let textIDs = g.next() % 4 == 0
                var rows: [Row] = (0..<count).map { i in
                    let id: Value = textIDs ? .text("id\(i)") : .integer(Int64(i) * 7 - 300)
                    var row = Row([("id", id), ("a", poolA[Int(g.next() % UInt64(poolA.count))]), ("b", poolB[Int(g.next() % UInt64(poolB.count))])])
                    if g.next() % 9 == 0 { row["a"] = nil }
                    return row
                }
                let inIDOrder = g.next() % 2 == 0
                if inIDOrder {
                    rows = QueryEvaluator.sorted(rows, by: [SortTerm(column: "id")])
                } else {
                    rows.shuffle(using: &g)
                }
                var terms: [SortTerm] = []
                for _ in 0..<(g.next() % 3) {
                    terms.append(SortTerm(column: ["a", "b"][Int(g.next() % 2)], ascending: g.next() % 2 == 0))
                }
                terms.append(SortTerm(column: "id", ascending: g.next() % 2 == 0))
                let expected = QueryEvaluator.sorted(rows, by: terms)
                let stored = StoredRows(rows)
                defer { stored.deallocate() }
                let actual = RowSort.order(count: rows.count, by: terms, idColumn: "id", inIDOrder: inIDOrder) {
                    stored.fields(terms[$0].column)
                }.map { rows[$0] }
                #expect(actual.map(\.description) == expected.map(\.description), "count \(count), terms \(terms), in id order \(inIDOrder)")
            }
        }
    }

    @Test func numberKeysOrderLikeValueCompare() {
        let values = Self.exactMix
        let stored = StoredRows(values.map { Row([("v", $0)]) })
        defer { stored.deallocate() }
        for a in values.indices {
            for b in values.indices {
                let (ka, kb) = (RowSort.numberKey(stored.field("v", ofRow: a)), RowSort.numberKey(stored.field("v", ofRow: b)))
                let byKey = ka < kb ? -1 : (ka == kb ? 0 : 1)
                #expect(byKey == Value.compare(values[a], values[b]), "\(values[a]) vs \(values[b])")
            }
        }
    }

    /// One byte-key term on many rows, each direction and tie-break: long runs that tie on
    /// one chunk and go on to the next, runs short enough for the insertion sort, and keys
    /// that end exactly at a chunk's end.
    @Test(arguments: [true, false])
    func byteRadixSortOrdersLikeTheReference(ascending: Bool) {
        var g = SeededGenerator(seed: ascending ? 7 : 8)
        for count in [2, 16, 17, 100, 3_000] {
            let alphabet = Array("ab\u{0}é")
            let rows: [Row] = (0..<count).map { i in
                var text = ""
                for _ in 0..<(g.next() % 24) { text.append(alphabet[Int(g.next() % UInt64(alphabet.count))]) }
                return Row([("id", .integer(Int64(i))), ("t", g.next() % 50 == 0 ? .null : .text(text))])
            }
            let stored = StoredRows(rows)
            defer { stored.deallocate() }
            for tieAscending in [true, false] {
                let terms = [SortTerm(column: "t", ascending: ascending), SortTerm(column: "id", ascending: tieAscending)]
                let expected = QueryEvaluator.sorted(rows, by: terms)
                let actual = RowSort.order(count: rows.count, by: terms, idColumn: "id", inIDOrder: true) {
                    stored.fields(terms[$0].column)
                }.map { rows[$0] }
                #expect(actual.map(\.description) == expected.map(\.description), "count \(count), tie ascending \(tieAscending)")
            }
        }
    }

    /// Chunks order like the bytes they cover, and say whether more follow.
    @Test func chunksOrderLikeTheirBytes() {
        let keys: [[UInt8]] = [[], [0], [0, 0], [1], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7, 0],
                               [1, 2, 3, 4, 5, 6, 8], [255], [255, 255, 255, 255, 255, 255, 255, 255, 255]]
        for a in keys {
            for b in keys {
                a.withUnsafeBytes { pa in
                    b.withUnsafeBytes { pb in
                        let (ca, cb) = (RowSort.chunk(.init(pa), at: 0), RowSort.chunk(.init(pb), at: 0))
                        let byChunk = ca < cb ? -1 : (ca == cb ? 0 : 1)
                        let byBytes = compareBytes(pa, pb)
                        if ca & 0xFF == 8 && cb & 0xFF == 8 {
                            // Both go on: the chunk orders them only where their first seven bytes differ.
                            #expect(byChunk == compareBytes(UnsafeRawBufferPointer(rebasing: pa[0..<7]), UnsafeRawBufferPointer(rebasing: pb[0..<7])), "\(a) vs \(b)")
                        } else {
                            #expect(byChunk == byBytes, "\(a) vs \(b)")
                        }
                    }
                }
            }
            a.withUnsafeBytes { #expect(RowSort.chunk(.init($0), at: 0) & 0xFF == UInt64(min(a.count, 7) + 1)) }
        }
        #expect(RowSort.chunk(.null, at: 0) == 0)
    }
}

/// Rows encoded as the backend stores them, in memory that stays put until `deallocate()`,
/// read back as ``StoredField``s the way a fetch reads its sort columns.
struct StoredRows {
    let rows: [UnsafeMutableRawBufferPointer]
    let layouts: TestLayouts

    init(_ rows: [Row]) {
        var layouts = TestLayouts()
        for row in rows { _ = layouts.number(row.columns) }
        self.layouts = layouts
        self.rows = rows.map { row in
            let bytes = layouts.encode(row)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return buffer
        }
    }

    func field(_ column: String, ofRow position: Int) -> StoredField {
        var reader = FieldReader(column: column)
        let field = reader.field(in: UnsafeRawBufferPointer(rows[position]), layouts: layouts.lookup)
        guard let field else {
            Issue.record("row \(position) does not decode")
            return .null
        }
        return field
    }

    func fields(_ column: String) -> [StoredField] {
        rows.indices.map { field(column, ofRow: $0) }
    }

    func deallocate() {
        for row in rows { row.deallocate() }
    }
}
