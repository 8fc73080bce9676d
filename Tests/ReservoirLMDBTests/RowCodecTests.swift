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
}
