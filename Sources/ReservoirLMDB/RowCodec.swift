import Foundation
import Reservoir

/// The compact binary row format stored as LMDB values.
///
///     version (1 byte, 1) · column count (varint) · per column:
///         name length (varint) · name (UTF-8) · tag (1 byte) · payload
///
/// Tags: 0 null; 1 integer, zigzag varint; 2 real, 8 bytes little-endian bit pattern;
/// 3 text, length varint + UTF-8; 4 blob, length varint + bytes. A row written before
/// a field existed simply lacks that column, which readers treat as null. The same
/// value encoding (tag + payload) stores ids in the change log, keeping their type.
enum RowCodec {
    static let version: UInt8 = 1

    enum Tag: UInt8 {
        case null = 0, integer, real, text, blob
    }

    // MARK: - Encoding

    static func encode(_ row: Row) -> [UInt8] {
        let size = encodedSize(row)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            initialized = write(row, to: base)
        }
    }

    /// The exact number of bytes ``write(_:to:)`` writes for `row`.
    static func encodedSize(_ row: Row) -> Int {
        row.columns.withUnsafeBufferPointer { columns in
            row.values.withUnsafeBufferPointer { values in
                var size = 1 + varintLength(UInt64(columns.count))
                for i in 0..<columns.count {
                    size += lengthPrefixedSize(columns[i].utf8.count) + valueSize(values[i])
                }
                return size
            }
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

    /// Writes `row` at `base`, which holds ``encodedSize(_:)`` bytes (an LMDB page reserved
    /// with `MDB_RESERVE`, or a new array); returns the number written.
    static func write(_ row: Row, to base: UnsafeMutablePointer<UInt8>) -> Int {
        row.columns.withUnsafeBufferPointer { columns in
            row.values.withUnsafeBufferPointer { values in
                var out = RawWriter(base: base)
                out.byte(version)
                out.varint(UInt64(columns.count))
                for i in 0..<columns.count {
                    out.string(columns[i])
                    out.value(values[i])
                }
                return out.offset
            }
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

    /// Decodes a stored row; nil when the bytes are not a row this version can read.
    static func decode(_ bytes: UnsafeRawBufferPointer, names: inout ColumnNameCache) -> Row? {
        var reader = ByteReader(bytes)
        guard let version = reader.byte(), version == Self.version,
              let storedCount = reader.varint(), storedCount <= UInt64(bytes.count)
        else { return nil }
        let count = Int(storedCount)
        if count > 0, count == names.lastColumns.count {
            var fast = reader
            if let values = decodeValuesInLastLayout(&fast, count: count, names: names), fast.isAtEnd {
                return Row(columns: names.lastColumns, values: values)
            }
        }
        var values: [Value] = []
        values.reserveCapacity(count)
        // Rows of one entity usually repeat the previous row's column list: share its array.
        let previous = names.lastColumns
        var columns: [String]? = previous.count == count ? nil : []
        columns?.reserveCapacity(count)
        for position in 0..<count {
            guard let nameBytes = reader.lengthPrefixed(),
                  let name = names.name(for: nameBytes, position: position),
                  let value = readValue(&reader)
            else { return nil }
            if columns == nil, previous[position] != name {
                columns = Array(previous[0..<position])
                columns?.reserveCapacity(count)
            }
            columns?.append(name)
            values.append(value)
        }
        guard reader.isAtEnd else { return nil }
        let finalColumns = columns ?? previous
        if columns != nil { names.remember(finalColumns) }
        return Row(columns: finalColumns, values: values)
    }

    /// Decodes a stored row into `row`, reusing its storage when it holds the previous row
    /// decoded with `names` and the stored row has the same columns (the usual case in a
    /// scan): values are overwritten in place and no row is allocated. False when the
    /// bytes are not a row this version can read.
    @inline(__always)
    static func decode(_ bytes: UnsafeRawBufferPointer, into row: inout Row, names: inout ColumnNameCache) -> Bool {
        if row.count > 0, row.columns == names.lastColumns {
            let refilled = names.withLastLayout { layout in
                row.withUnsafeMutableValues { refill($0, from: bytes, layout: layout) }
            }
            if refilled { return true }
        }
        guard let decoded = decode(bytes, names: &names) else { return false }
        row = decoded
        return true
    }

    /// Overwrites `values` with the stored row's when its columns are exactly `layout`'s, in
    /// its order, and `values` has a place for each; false when they are not (or the bytes
    /// are damaged), with `values` partly overwritten.
    @inline(__always)
    static func refill(_ values: UnsafeMutableBufferPointer<Value>, from bytes: UnsafeRawBufferPointer, layout: ColumnLayout) -> Bool {
        var reader = ByteReader(bytes)
        guard let version = reader.byte(), version == Self.version, let count = reader.varint(),
              count == UInt64(values.count), layout.ends.count == values.count
        else { return false }
        return forEachValue(&reader, in: layout) { values[$0] = $1 } && reader.isAtEnd
    }

    /// The values of a row whose columns are exactly `layout`'s, in its order (the usual
    /// case in a scan), passed to `visit` with their positions: each name is checked by
    /// comparing its encoded bytes, with no string built or looked up. False when a name
    /// differs or the bytes are damaged.
    @inline(__always)
    private static func forEachValue(_ reader: inout ByteReader, in layout: ColumnLayout, _ visit: (Int, Value) -> Void) -> Bool {
        var start = 0
        for position in 0..<layout.ends.count {
            let end = layout.ends[position]
            guard reader.skip(matching: UnsafeRawBufferPointer(rebasing: layout.bytes[start..<end])),
                  let value = readValue(&reader)
            else { return false }
            visit(position, value)
            start = end
        }
        return true
    }

    /// The values of a row in the last row's layout (see ``forEachValue(_:in:_:)``).
    @inline(__always)
    private static func decodeValuesInLastLayout(_ reader: inout ByteReader, count: Int, names: ColumnNameCache) -> [Value]? {
        names.withLastLayout { layout in
            guard layout.ends.count == count else { return nil }
            // reserveCapacity, not Array(unsafeUninitializedCapacity:): on Linux the latter
            // looked up the array's generic metadata in the runtime's cache on every row.
            var values: [Value] = []
            values.reserveCapacity(count)
            return forEachValue(&reader, in: layout) { values.append($1) } ? values : nil
        }
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

/// Interns column names while decoding, so a scan over many rows does not build the
/// same strings again and again.
struct ColumnNameCache {
    /// The column list of the last row decoded.
    private(set) var lastColumns: [String] = []
    /// `lastColumns` as the row format stores them (length varint, UTF-8 each), and where
    /// each one ends: a row with the same columns is recognised by comparing bytes.
    private var layout: [UInt8] = []
    private var layoutEnds: [Int] = []
    private var entries: [(bytes: [UInt8], name: String)] = []
    /// The entry the column at each position matched last: rows of one entity usually
    /// list their columns in the same order, so the first comparison nearly always hits.
    private var byPosition: [Int] = []

    /// Runs `body` with the last column list as the row format spells it.
    @inline(__always)
    func withLastLayout<R>(_ body: (ColumnLayout) throws -> R) rethrows -> R {
        try layout.withUnsafeBytes { bytes in
            try layoutEnds.withUnsafeBufferPointer { ends in try body(ColumnLayout(bytes: bytes, ends: ends)) }
        }
    }

    mutating func remember(_ columns: [String]) {
        lastColumns = columns
        var writer = ByteWriter()
        layoutEnds.removeAll(keepingCapacity: true)
        for column in columns {
            writer.string(column)
            layoutEnds.append(writer.bytes.count)
        }
        layout = writer.bytes
    }

    mutating func name(for bytes: UnsafeRawBufferPointer, position: Int) -> String? {
        if position < byPosition.count {
            let entry = entries[byPosition[position]]
            if entry.bytes.count == bytes.count, entry.bytes.withUnsafeBytes({ compareBytes($0, bytes) == 0 }) {
                return entry.name
            }
        }
        var found: Int?
        for (index, entry) in entries.enumerated() where entry.bytes.count == bytes.count {
            if entry.bytes.withUnsafeBytes({ compareBytes($0, bytes) == 0 }) {
                found = index
                break
            }
        }
        if found == nil {
                guard let name = decodeUTF8(bytes) else { return nil }
            guard entries.count < 256 else { return name }
            entries.append((Array(bytes), name))
            found = entries.count - 1
        }
        guard let index = found else { return nil }
        if position < byPosition.count {
            byPosition[position] = index
        } else if position == byPosition.count, position < 256 {
            byPosition.append(index)
        }
        return entries[index].name
    }
}

/// A column list as the row format spells it: each name's length varint and UTF-8, one
/// after another, and where each one ends.
struct ColumnLayout {
    let bytes: UnsafeRawBufferPointer
    let ends: UnsafeBufferPointer<Int>
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

/// Writes into memory sized beforehand by ``RowCodec/encode(_:)``.
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
