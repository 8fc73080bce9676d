import Foundation
@testable import ReservoirPostgres
import Testing

/// The bytes a binary `COPY` row is made of (PostgreSQL's format: a 16-bit field count, then
/// each field's 32-bit length, -1 for null, and its bytes, most significant byte first),
/// written through `CopyBuffer` without a server.
@Suite("PostgreSQL COPY buffer")
struct CopyBufferTests {
    private func bytes(_ buffer: CopyBuffer) -> [UInt8] {
        buffer.withBytes { Array($0) }
    }

    @Test func eachKindOfFieldIsItsLengthThenItsBytesBigEndian() {
        let buffer = CopyBuffer()
        buffer.appendBigEndian(Int16(5))
        PGParameter.integer(-2).appendField(to: buffer)
        PGParameter.real(1.5).appendField(to: buffer)
        PGParameter.text("hé").appendField(to: buffer)
        PGParameter.bytes([0, 255]).appendField(to: buffer)
        PGParameter.null.appendField(to: buffer)
        PGParameter.text("").appendField(to: buffer)
        var expected: [UInt8] = [0, 5]
        expected += [0, 0, 0, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]
        expected += [0, 0, 0, 8, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0]
        expected += [0, 0, 0, 3, 0x68, 0xC3, 0xA9]
        expected += [0, 0, 0, 2, 0, 255]
        expected += [0xFF, 0xFF, 0xFF, 0xFF]
        expected += [0, 0, 0, 0]
        #expect(bytes(buffer) == expected)
        #expect(buffer.count == expected.count)
    }

    @Test func growingKeepsWhatWasWritten() {
        // A small buffer made to grow many times, and by one field far larger than it.
        let buffer = CopyBuffer(capacity: 64)
        var expected: [UInt8] = []
        for value in 0..<5_000 {
            PGParameter.integer(Int64(value)).appendField(to: buffer)
            expected += [0, 0, 0, 8] + withUnsafeBytes(of: Int64(value).bigEndian) { Array($0) }
        }
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        PGParameter.bytes(large).appendField(to: buffer)
        expected += withUnsafeBytes(of: Int32(large.count).bigEndian) { Array($0) } + large
        #expect(buffer.count == expected.count)
        #expect(bytes(buffer) == expected)
    }

    @Test func aNewBufferHoldsNothingUntilItsFirstAppend() {
        let buffer = CopyBuffer()
        #expect(buffer.count == 0)
        #expect(bytes(buffer).isEmpty)
        buffer.append(UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(buffer.count == 0)
        PGParameter.bytes([]).appendField(to: buffer)
        #expect(bytes(buffer) == [0, 0, 0, 0])
    }

    @Test func aRowTakenBackLeavesTheRowsBefore() {
        let buffer = CopyBuffer(capacity: 64)
        PGParameter.text("kept").appendField(to: buffer)
        let kept = bytes(buffer)
        let start = buffer.count
        PGParameter.text(String(repeating: "x", count: 1_000)).appendField(to: buffer)
        buffer.truncate(to: start)
        #expect(bytes(buffer) == kept)
        PGParameter.integer(7).appendField(to: buffer)
        #expect(bytes(buffer) == kept + [0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7])
        buffer.removeAll()
        #expect(buffer.count == 0)
        #expect(bytes(buffer).isEmpty)
    }
}
