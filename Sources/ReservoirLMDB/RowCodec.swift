import Foundation
import Reservoir

/// The compact binary row format stored as LMDB values.
///
///     version 2 (1 byte) · layout number (varint) · per column of the layout: tag (1 byte) · payload
///
/// A row names its columns by the number of a ``RowLayout``, a column list stored once in
/// `meta` (see ``Catalog``), instead of spelling them: rows are smaller, and reading one is
/// a run of values with no names to compare. Tags: 0 null; 1 integer, zigzag varint; 2
/// real, 8 bytes little-endian bit pattern; 3 text, length varint + UTF-8; 4 blob, length
/// varint + bytes. The same value encoding (tag + payload) stores ids in the change log,
/// keeping their type.
///
/// Version 1 rows, which earlier versions of this library wrote and which are still read,
/// spell each column's name before its value:
///
///     version 1 (1 byte) · column count (varint) · per column: name length (varint) · name (UTF-8) · tag · payload
///
/// A row written before a field existed lacks that column (its layout does not list it),
/// which readers treat as null.
enum RowCodec {
    /// The version this library writes.
    static let version: UInt8 = 2
    /// Rows with names spelled out, still read.
    static let namedVersion: UInt8 = 1

    enum Tag: UInt8 {
        case null = 0, integer, real, text, blob
    }

    // MARK: - Encoding

    /// The exact number of bytes ``write(_:layout:to:)`` writes for `row`.
    static func encodedSize(_ row: Row, layout: UInt32) -> Int {
        row.values.withUnsafeBufferPointer { values in
            var size = 1 + varintLength(UInt64(layout))
            for value in values { size += valueSize(value) }
            return size
        }
    }

    /// The bytes of `value`'s encoding: tag, then payload.
    @inline(__always)
    static func valueSize(_ value: Value) -> Int {
        switch value {
        case .null: 1
        case let .integer(v): 1 + varintLength(zigzag(v))
        case .real: 9
        case let .text(text): 1 + lengthPrefixedSize(text.utf8.count)
        case let .blob(data): 1 + lengthPrefixedSize(data.count)
        }
    }

    /// The bytes of `length` bytes after their varint length.
    @inline(__always)
    static func lengthPrefixedSize(_ length: Int) -> Int {
        varintLength(UInt64(length)) + length
    }

    /// Writes `row` in `layout` at `base`, which holds ``encodedSize(_:layout:)`` bytes (an
    /// LMDB page reserved with `MDB_RESERVE`, or a new array); returns the number written.
    static func write(_ row: Row, layout: UInt32, to base: UnsafeMutablePointer<UInt8>) -> Int {
        row.values.withUnsafeBufferPointer { values in
            var out = RawWriter(base: base)
            out.byte(version)
            out.varint(UInt64(layout))
            for value in values { out.value(value) }
            return out.offset
        }
    }

    @inline(__always)
    static func zigzag(_ i: Int64) -> UInt64 { UInt64(bitPattern: (i << 1) ^ (i >> 63)) }

    /// Bytes of a varint: one per 7 significant bits, at least one.
    @inline(__always)
    static func varintLength(_ value: UInt64) -> Int {
        (64 - (value | 1).leadingZeroBitCount + 6) / 7
    }

    // MARK: - Decoding

    /// The layout number of a version 2 row and where its values start; nil for a version 1
    /// row or bytes that are not a row.
    @inline(__always)
    static func header(_ bytes: UnsafeRawBufferPointer) -> (layout: UInt32, valuesAt: Int)? {
        var reader = ByteReader(bytes)
        guard reader.byte() == version, let number = reader.varint(), number <= UInt64(UInt32.max) else { return nil }
        return (UInt32(number), reader.offset)
    }

    /// The values of a version 2 row, from `offset`, one per column of its layout (`count`);
    /// nil when the bytes are damaged or hold more.
    @inline(__always)
    static func values(_ bytes: UnsafeRawBufferPointer, at offset: Int, count: Int) -> [Value]? {
        var reader = ByteReader(bytes)
        reader.offset = offset
        // reserveCapacity, not Array(unsafeUninitializedCapacity:): on Linux the latter
        // looked up the array's generic metadata in the runtime's cache on every row.
        var values: [Value] = []
        values.reserveCapacity(count)
        for _ in 0..<count {
            guard let value = readValue(&reader) else { return nil }
            values.append(value)
        }
        return reader.isAtEnd ? values : nil
    }

    /// Overwrites `values` with those of a version 2 row, from `offset`; false when the bytes
    /// are damaged or hold more, with `values` partly overwritten.
    @inline(__always)
    static func refill(_ values: UnsafeMutableBufferPointer<Value>, from bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var reader = ByteReader(bytes)
        reader.offset = offset
        for position in values.indices {
            guard let value = readValue(&reader) else { return false }
            values[position] = value
        }
        return reader.isAtEnd
    }

    /// Decodes a version 1 row, whose columns are spelled out; nil when the bytes are not one.
    static func decodeNamed(_ bytes: UnsafeRawBufferPointer) -> Row? {
        var reader = ByteReader(bytes)
        guard reader.byte() == namedVersion, let count = reader.varint(), count <= UInt64(bytes.count) else { return nil }
        var columns: [String] = []
        var values: [Value] = []
        columns.reserveCapacity(Int(count))
        values.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let name = reader.lengthPrefixed().flatMap(decodeUTF8), let value = readValue(&reader) else { return nil }
            columns.append(name)
            values.append(value)
        }
        return reader.isAtEnd ? Row(columns: columns, values: values) : nil
    }

    /// Reads one tagged value; nil when it is damaged, including text that is not UTF-8.
    @inline(__always)
    static func readValue(_ reader: inout ByteReader) -> Value? {
        switch readTagged(&reader) {
        case nil: nil
        case .null: .null
        case let .integer(integer): .integer(integer)
        case let .real(real): .real(real)
        case let .text(utf8): decodeUTF8(utf8).map { .text($0) }
        case let .blob(bytes): .blob(Data(bytes))
        }
    }

    /// Reads one tagged value (tag byte, then the payload), leaving text and blobs as byte
    /// ranges in `reader`'s bytes; text is not checked to be UTF-8 here. Nil when damaged.
    @inline(__always)
    static func readTagged(_ reader: inout ByteReader) -> StoredField? {
        guard let raw = reader.byte(), let tag = Tag(rawValue: raw) else { return nil }
        switch tag {
        case .null:
            return .null
        case .integer:
            guard let z = reader.varint() else { return nil }
            return .integer(Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1))))
        case .real:
            guard let bits = reader.fixed64() else { return nil }
            return .real(Double(bitPattern: bits))
        case .text:
            return reader.lengthPrefixed().map { .text($0) }
        case .blob:
            return reader.lengthPrefixed().map { .blob($0) }
        }
    }
}

/// Decodes stored rows of either version, remembering the layout of the last one: the
/// rows of a scan nearly always share it, so it is looked up once.
struct RowReader {
    private var last: RowLayout?

    /// Decodes a stored row into `row`, overwriting its values in place when it holds the
    /// last layout's columns (the usual case in a scan: no row is allocated); `layouts` finds
    /// a layout by number. False when the bytes are not a row this library can read, or name
    /// a layout `layouts` does not know.
    @inline(__always)
    mutating func decode(_ bytes: UnsafeRawBufferPointer, into row: inout Row,
                         layouts: (UInt32) throws -> RowLayout?) rethrows -> Bool {
        guard let (number, offset) = RowCodec.header(bytes) else {
            guard let named = RowCodec.decodeNamed(bytes) else { return false }
            row = named
            return true
        }
        let layout: RowLayout
        if let last, last.number == number {
            layout = last
        } else {
            guard let found = try layouts(number) else { return false }
            layout = found
            last = found
        }
        // Identical column arrays compare without looking at their names.
        if row.count == layout.columns.count, row.columns == layout.columns {
            return row.withUnsafeMutableValues { RowCodec.refill($0, from: bytes, at: offset) }
        }
        guard let values = RowCodec.values(bytes, at: offset, count: layout.columns.count) else { return false }
        row = Row(columns: layout.columns, values: values)
        return true
    }

    /// Decodes a stored row; nil as ``decode(_:into:layouts:)`` returns false.
    mutating func decode(_ bytes: UnsafeRawBufferPointer, layouts: (UInt32) throws -> RowLayout?) rethrows -> Row? {
        var row = Row()
        return try decode(bytes, into: &row, layouts: layouts) ? row : nil
    }
}

// MARK: - Byte helpers

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

/// Writes into memory sized beforehand (``RowCodec/encodedSize(_:layout:)``, ``Catalog/logRecordSize(_:)``).
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
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < buffer.count, shift < 64 {
            let b = buffer[offset]
            offset += 1
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
        return nil
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
