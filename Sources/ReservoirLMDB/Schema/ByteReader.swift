import Foundation
import Reservoir

/// Reads what ``ByteWriter`` and ``RawWriter`` wrote, bounds-checked: every read returns nil
/// past the end instead of trapping, so damaged bytes decode to nil.
struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    var isAtEnd: Bool { offset == buffer.count }

    @inline(__always)
    mutating func byte() -> UInt8? {
        guard offset < buffer.count else { return nil }
        defer { offset += 1 }
        return buffer[offset]
    }

    @inline(__always)
    mutating func varint() -> UInt64? {
        PackedIDs.readVarint(buffer, at: &offset)
    }

    @inline(__always)
    mutating func fixed64() -> UInt64? {
        guard buffer.count &- offset >= 8 else { return nil }
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        offset &+= 8
        return UInt64(littleEndian: value)
    }

    /// Steps over `expected` when the next bytes are exactly it.
    @inline(__always)
    mutating func skip(matching expected: UnsafeRawBufferPointer) -> Bool {
        let n = expected.count
        guard buffer.count &- offset >= n else { return false }
        if n > 0 {
            guard let here = buffer.baseAddress, let there = expected.baseAddress,
                  sameBytes(here + offset, there, count: n)
            else { return false }
        }
        offset &+= n
        return true
    }

    /// Steps over one tagged value (see ``RowCodec``) without decoding it.
    @inline(__always)
    mutating func skipValue() -> Bool {
        guard let raw = byte(), let tag = RowCodec.Tag(rawValue: raw) else { return false }
        switch tag {
        case .null: return true
        case .integer: return skipVarint()
        case .real: return skip(8)
        case .text, .blob: return skipLengthPrefixed()
        }
    }

    /// Steps over a varint without decoding it.
    @inline(__always)
    mutating func skipVarint() -> Bool {
        var i = offset
        // A varint of a 64-bit value has at most ten bytes.
        let end = Swift.min(buffer.count, offset &+ 10)
        while i < end {
            let b = buffer[i]
            i &+= 1
            if b < 0x80 {
                offset = i
                return true
            }
        }
        return false
    }

    /// Steps over `count` bytes, when there are that many.
    @inline(__always)
    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, buffer.count &- offset >= count else { return false }
        offset &+= count
        return true
    }

    /// Steps over a length varint and that many bytes.
    @inline(__always)
    mutating func skipLengthPrefixed() -> Bool {
        guard let length = varint(), length <= UInt64(buffer.count &- offset) else { return false }
        offset &+= Int(length)
        return true
    }

    @inline(__always)
    mutating func lengthPrefixed() -> UnsafeRawBufferPointer? {
        guard let length = varint(), length <= UInt64(buffer.count - offset) else { return nil }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + Int(length)])
        offset += Int(length)
        return slice
    }
}
