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
}
