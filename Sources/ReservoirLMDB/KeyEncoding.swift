import Foundation
import Reservoir

/// The order-preserving byte encoding of ``Value``s used for LMDB keys.
///
/// For any two values, comparing their encodings with `memcmp` (LMDB's default key
/// order) gives exactly `Value.compare`: null < numbers < text < blob, integers and
/// reals compared numerically and exactly, text by UTF-8 bytes, blobs by bytes.
/// Equal values (`.integer(1)` and `.real(1.0)`, `0.0` and `-0.0`) encode identically.
/// Every encoding is self-delimiting (no encoding is a prefix of another), so a value
/// can be followed by more bytes (an index key is the value, then the id) without
/// disturbing the order.
///
/// | value | bytes |
/// | --- | --- |
/// | null | `05` |
/// | NaN | `11` |
/// | real below -2^63 | `12`, the bits inverted (8 bytes, big-endian) |
/// | number in [-2^63, 2^63) | `13`, the integer part biased (8 bytes, big-endian), then `01` when integral, `00` + the fraction's magnitude inverted when negative, `02` + the fraction's bits when positive |
/// | real from 2^63 up | `14`, the bits (8 bytes, big-endian) |
/// | text | `20`, the UTF-8 bytes with `00` written `00 FF`, then `00 00` |
/// | blob | `30`, the bytes escaped like text, then `00 00` |
enum KeyEncoding {
    static let nullTag: UInt8 = 0x05
    static let nanTag: UInt8 = 0x11
    static let negativeHugeTag: UInt8 = 0x12
    static let numberTag: UInt8 = 0x13
    static let positiveHugeTag: UInt8 = 0x14
    static let textTag: UInt8 = 0x20
    static let blobTag: UInt8 = 0x30
    /// Index entries whose key would exceed LMDB's key size live after every value.
    static let overlongTag: UInt8 = 0xFF

    /// The first byte any non-null value encodes with: the lower bound of "not null".
    static let firstNonNull: [UInt8] = [nanTag]

    static func encode(_ value: Value) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(maxFixedLength)
        append(value, to: &bytes)
        return bytes
    }

    static func append(_ value: Value, to bytes: inout [UInt8]) {
        switch value {
        case .null, .integer, .real:
            var storage: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &storage) { raw in
                let count = writeFixed(value, to: raw)
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<count]))
            }
        case let .text(s):
            bytes.append(textTag)
            var s = s
            s.withUTF8 { appendEscaped(UnsafeRawBufferPointer($0), to: &bytes) }
        case let .blob(data):
            bytes.append(blobTag)
            data.withUnsafeBytes { appendEscaped($0, to: &bytes) }
        }
    }

    /// The escaped form of text's bytes without the terminator: the common prefix of
    /// the encodings of every text starting with `prefix`.
    static func textPrefix(_ prefix: String) -> [UInt8] {
        var bytes: [UInt8] = [textTag]
        var prefix = prefix
        prefix.withUTF8 { utf8 in
            for byte in utf8 {
                bytes.append(byte)
                if byte == 0 { bytes.append(0xFF) }
            }
        }
        return bytes
    }

    /// The longest encoding of a number or null: tag, 8 bytes, fraction marker, 8 bytes.
    static let maxFixedLength = 18

    /// Calls `body` with the encoding of `value`. Numbers and null, the usual ids, are
    /// encoded on the stack, so a put or a lookup by id allocates nothing.
    @inline(__always)
    static func withEncoded<R>(_ value: Value, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch value {
        case .text, .blob:
            return try encode(value).withUnsafeBytes(body)
        case .null, .integer, .real:
            var storage: (UInt64, UInt64, UInt64) = (0, 0, 0)
            return try withUnsafeMutableBytes(of: &storage) { raw in
                let count = writeFixed(value, to: raw)
                return try body(UnsafeRawBufferPointer(rebasing: raw[0..<count]))
            }
        }
    }

    /// Writes the encoding of a number or null (at most ``maxFixedLength`` bytes) at the
    /// start of `out`; returns its length. Text and blobs write nothing and return 0.
    @inline(__always)
    static func writeFixed(_ value: Value, to out: UnsafeMutableRawBufferPointer) -> Int {
        switch value {
        case .null:
            out[0] = nullTag
            return 1
        case let .integer(i):
            return writeNumber(i, fraction: 0, to: out)
        case let .real(d):
            if d.isNaN {
                out[0] = nanTag
                return 1
            } else if d < -9_223_372_036_854_775_808.0 {
                out[0] = negativeHugeTag
                storeBigEndian(~d.bitPattern, out, at: 1)
                return 9
            } else if d >= 9_223_372_036_854_775_808.0 {
                out[0] = positiveHugeTag
                storeBigEndian(d.bitPattern, out, at: 1)
                return 9
            }
            // In range: the integer part is exact in Int64 and the fraction is exact too.
            let whole = d.rounded(.towardZero)
            return writeNumber(Int64(whole), fraction: d - whole, to: out)
        case .text, .blob:
            return 0
        }
    }

    @inline(__always)
    private static func writeNumber(_ i: Int64, fraction: Double, to out: UnsafeMutableRawBufferPointer) -> Int {
        out[0] = numberTag
        storeBigEndian(UInt64(bitPattern: i) ^ (1 << 63), out, at: 1)
        if fraction == 0 {
            out[9] = 0x01
            return 10
        } else if fraction < 0 {
            // A larger magnitude is a smaller number: invert.
            out[9] = 0x00
            storeBigEndian(~(-fraction).bitPattern, out, at: 10)
        } else {
            out[9] = 0x02
            storeBigEndian(fraction.bitPattern, out, at: 10)
        }
        return 18
    }

    @inline(__always)
    private static func storeBigEndian(_ value: UInt64, _ out: UnsafeMutableRawBufferPointer, at offset: Int) {
        out.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
    }

    private static func appendEscaped(_ source: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + source.count + 2)
        for byte in source {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
        }
        bytes.append(0x00)
        bytes.append(0x00)
    }

    /// The length of the value encoding at the start of `bytes`, or nil when it is malformed.
    static func length(of bytes: UnsafeRawBufferPointer) -> Int? {
        guard let tag = bytes.first else { return nil }
        switch tag {
        case nullTag, nanTag:
            return 1
        case negativeHugeTag, positiveHugeTag:
            return bytes.count >= 9 ? 9 : nil
        case numberTag:
            guard bytes.count >= 10 else { return nil }
            switch bytes[9] {
            case 0x01: return 10
            case 0x00, 0x02: return bytes.count >= 18 ? 18 : nil
            default: return nil
            }
        case textTag, blobTag:
            var i = 1
            while i + 1 < bytes.count {
                if bytes[i] == 0 {
                    if bytes[i + 1] == 0 { return i + 2 }
                    guard bytes[i + 1] == 0xFF else { return nil }
                    i += 2
                } else {
                    i += 1
                }
            }
            return nil
        default:
            return nil
        }
    }
}

/// Lexicographic byte comparison, as LMDB orders keys.
@inline(__always)
func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let n = min(a.count, b.count)
    if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
        let c = memcmp(pa, pb, n)
        if c != 0 { return c < 0 ? -1 : 1 }
    }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

/// Whether `count` bytes at `a` and at `b` are the same, compared a word at a time inline
/// (a memcmp call costs more than the comparison for a few dozen bytes): whole words, then
/// one more word (or half or quarter word) ending at the last byte, overlapping what was
/// compared, so a short name costs one or two loads a side and no byte loop.
@inline(__always)
func sameBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
    @inline(__always)
    func same<T: FixedWidthInteger>(at offset: Int, _: T.Type) -> Bool {
        a.loadUnaligned(fromByteOffset: offset, as: T.self) == b.loadUnaligned(fromByteOffset: offset, as: T.self)
    }
    switch count {
    case 0:
        return true
    case 1:
        return same(at: 0, UInt8.self)
    case 2, 3:
        return same(at: 0, UInt16.self) && same(at: count &- 2, UInt16.self)
    case 4...7:
        return same(at: 0, UInt32.self) && same(at: count &- 4, UInt32.self)
    default:
        var i = 0
        while i &+ 8 <= count {
            if !same(at: i, UInt64.self) { return false }
            i &+= 8
        }
        return i == count || same(at: count &- 8, UInt64.self)
    }
}

func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in compareBytes(pa, pb) } }
}

extension KeyEncoding {
    /// The value an encoding stands for (integral numbers come back as integers), or nil
    /// when the bytes are not exactly one encoded value. Used for messages and tools.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> Value? {
        guard let length = length(of: bytes), length == bytes.count, let tag = bytes.first else { return nil }
        func bigEndian(at offset: Int) -> UInt64 {
            var value: UInt64 = 0
            for i in offset..<offset + 8 { value = value << 8 | UInt64(bytes[i]) }
            return value
        }
        switch tag {
        case nullTag: return .null
        case nanTag: return .real(.nan)
        case negativeHugeTag: return .real(Double(bitPattern: ~bigEndian(at: 1)))
        case positiveHugeTag: return .real(Double(bitPattern: bigEndian(at: 1)))
        case numberTag:
            let whole = Int64(bitPattern: bigEndian(at: 1) ^ (1 << 63))
            switch bytes[9] {
            case 0x01: return .integer(whole)
            case 0x00: return .real(Double(whole) - Double(bitPattern: ~bigEndian(at: 10)))
            default: return .real(Double(whole) + Double(bitPattern: bigEndian(at: 10)))
            }
        case textTag, blobTag:
            var raw: [UInt8] = []
            var i = 1
            while i < length - 2 {
                raw.append(bytes[i])
                i += bytes[i] == 0 ? 2 : 1
            }
            if tag == blobTag { return .blob(Data(raw)) }
            return String(validating: raw, as: UTF8.self).map(Value.text)
        default:
            return nil
        }
    }
}
