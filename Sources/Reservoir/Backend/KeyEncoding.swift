import Foundation

/// The order-preserving byte encoding of ``Value``s used for LMDB keys and
/// PostgreSQL columns that hold values of more than one kind.
///
/// For any two values, comparing their encodings with `memcmp` (LMDB's default key
/// order, PostgreSQL's `bytea` order) gives exactly `Value.compare`: null < numbers < text < blob, integers and
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
public enum KeyEncoding {
    /// The first byte of null's encoding.
    public static let nullTag: UInt8 = 0x05
    /// The first byte of NaN's encoding (NaN is never stored, but hand-built values may hold it).
    public static let nanTag: UInt8 = 0x11
    /// The first byte of a real below -2^63, -∞ included.
    public static let negativeHugeTag: UInt8 = 0x12
    /// The first byte of a number in [-2^63, 2^63).
    public static let numberTag: UInt8 = 0x13
    /// The first byte of a real from 2^63 up, +∞ included.
    public static let positiveHugeTag: UInt8 = 0x14
    /// The first byte of a text's encoding.
    public static let textTag: UInt8 = 0x20
    /// The first byte of a blob's encoding.
    public static let blobTag: UInt8 = 0x30

    /// The first byte any non-null value encodes with: the lower bound of "not null".
    public static let firstNonNull: [UInt8] = [nanTag]

    /// The order-preserving bytes of `value`.
    public static func encode(_ value: Value) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(maxFixedLength)
        append(value, to: &bytes)
        return bytes
    }

    /// Appends the order-preserving bytes of `value` to `bytes`.
    public static func append(_ value: Value, to bytes: inout [UInt8]) {
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
    public static func textPrefix(_ prefix: String) -> [UInt8] {
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
    public static let maxFixedLength = 18

    /// Calls `body` with the encoding of `value`. Numbers and null, the usual ids, are
    /// encoded on the stack, so a put or a lookup by id allocates nothing.
    @inlinable @inline(__always)
    public static func withEncoded<R>(_ value: Value, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
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
    @inlinable @inline(__always)
    public static func writeFixed(_ value: Value, to out: UnsafeMutableRawBufferPointer) -> Int {
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

    @inlinable @inline(__always)
    static func writeNumber(_ i: Int64, fraction: Double, to out: UnsafeMutableRawBufferPointer) -> Int {
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

    @inlinable @inline(__always)
    static func storeBigEndian(_ value: UInt64, _ out: UnsafeMutableRawBufferPointer, at offset: Int) {
        out.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
    }

    static func appendEscaped(_ source: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + source.count + 2)
        for byte in source {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
        }
        bytes.append(0x00)
        bytes.append(0x00)
    }

    /// The length of the value encoding at the start of `bytes`, or nil when it is malformed.
    public static func length(of bytes: UnsafeRawBufferPointer) -> Int? {
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

extension KeyEncoding {
    /// The value an encoding stands for (integral numbers come back as integers), or nil
    /// when the bytes are not exactly one encoded value. Used for messages and tools.
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> Value? {
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
