import Foundation
import Reservoir

// Byte writing shared by the row, description and change-log encodings, and the UTF-8
// checks their decoders share.

/// The string UTF-8 `bytes` spell, or nil when they are not valid UTF-8. ASCII, the usual
/// case, skips the generic validator.
@inline(__always)
func decodeUTF8(_ bytes: UnsafeRawBufferPointer) -> String? {
    let utf8 = bytes.assumingMemoryBound(to: UInt8.self)
    if isASCII(bytes) {
        return String(decoding: utf8, as: UTF8.self)
    }
    return String(validating: utf8, as: UTF8.self)
}

/// Whether every byte is below 0x80, tested a word at a time.
@inline(__always)
func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var i = 0
    let n = bytes.count
    var high: UInt64 = 0
    while i + 8 <= n {
        high |= bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        i += 8
    }
    while i < n {
        high |= UInt64(bytes[i])
        i += 1
    }
    return high & 0x8080_8080_8080_8080 == 0
}

/// Writes into memory sized beforehand (``RowCodec/encodedSize(_:layout:)``, ``StoreFormat/logRecordSize(_:)``).
struct RawWriter {
    let base: UnsafeMutablePointer<UInt8>
    var offset = 0

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        base[offset] = value
        offset += 1
    }

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            byte(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        byte(UInt8(v))
    }

    @inline(__always)
    mutating func fixed64(_ value: UInt64) {
        var little = value.littleEndian
        withUnsafeBytes(of: &little) { raw($0) }
    }

    @inline(__always)
    mutating func raw(_ source: UnsafeRawBufferPointer) {
        if let address = source.baseAddress, source.count > 0 {
            UnsafeMutableRawPointer(base + offset).copyMemory(from: address, byteCount: source.count)
        }
        offset += source.count
    }

    @inline(__always)
    mutating func string(_ text: String) {
        varint(UInt64(text.utf8.count))
        if text.utf8.withContiguousStorageIfAvailable({ raw(UnsafeRawBufferPointer($0)) }) == nil {
            var copy = text
            copy.withUTF8 { raw(UnsafeRawBufferPointer($0)) }
        }
    }

    @inline(__always)
    mutating func bytes(_ data: Data) {
        data.withUnsafeBytes { raw($0) }
    }

    /// `value`'s tag, then its payload (``RowCodec/valueSize(_:)`` bytes).
    @_transparent
    mutating func value(_ value: Value) {
        switch value {
        case .null:
            byte(RowCodec.Tag.null.rawValue)
        case let .integer(v):
            byte(RowCodec.Tag.integer.rawValue)
            varint(RowCodec.zigzag(v))
        case let .real(d):
            byte(RowCodec.Tag.real.rawValue)
            fixed64(d.bitPattern)
        case let .text(text):
            byte(RowCodec.Tag.text.rawValue)
            string(text)
        case let .blob(data):
            byte(RowCodec.Tag.blob.rawValue)
            varint(UInt64(data.count))
            bytes(data)
        }
    }
}

struct ByteWriter {
    var bytes: [UInt8] = []

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }
}
