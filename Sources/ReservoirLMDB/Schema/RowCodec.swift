import Foundation
import Reservoir

/// The compact binary row format stored as LMDB values.
///
///     version 2 (1 byte) · layout number (varint) · per column of the layout: tag (1 byte) · payload
///
/// A row names its columns by the number of a ``RowLayout``, a column list stored once in
/// `meta` (see ``StoreFormat``), instead of spelling them: rows are smaller, and reading one is
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
            Row.overwrite(values, at: position, with: value)
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
/// rows of a scan nearly always share it, so it is looked up once. What it remembers is the
/// layout's number and columns, held directly: reading them costs no retain of a layout
/// object per row.
struct StoredRowDecoder {
    /// The number of the layout last read (nil before the first row).
    private var lastNumber: UInt32?
    /// Its columns, as the entity reads them through `lastRenames`.
    private var lastColumns: [String] = []
    /// The rename history `lastColumns` was read through: a layout number reads as other
    /// columns in an entity whose columns were renamed in place.
    private var lastRenames: RenameHistory?

    /// Decodes a stored row into `row`, overwriting its values in place when it holds the
    /// last layout's columns (the usual case in a scan: no row is allocated); `layouts` finds
    /// a layout by number, and the row's entity reads its columns through `renames` (nil when
    /// they were never renamed in place). False when the bytes are not a row this library can
    /// read, or name a layout `layouts` does not know.
    @inline(__always)
    mutating func decode(_ bytes: UnsafeRawBufferPointer, into row: inout Row, renames: RenameHistory?,
                         layouts: (UInt32) throws -> RowLayout?) rethrows -> Bool {
        guard let (number, offset) = RowCodec.header(bytes) else {
            return Self.decodeNamed(bytes, into: &row, renames: renames)
        }
        if number != lastNumber || lastRenames !== renames {
            guard let found = try layouts(number) else { return false }
            lastColumns = Self.view(of: found, renames).columns
            lastNumber = number
            lastRenames = renames
        }
        // The row refilled before holds this very array.
        if Row.sameColumns(row.columns, lastColumns) {
            return row.withUnsafeMutableValues { RowCodec.refill($0, from: bytes, at: offset) }
        }
        guard let values = RowCodec.values(bytes, at: offset, count: lastColumns.count) else { return false }
        row = Row(columns: lastColumns, values: values)
        return true
    }

    /// A version 1 row (older than every rename), its columns renamed. Kept out of line, like
    /// ``view(of:_:)``: the usual rows' path stays small enough to inline what it calls.
    @inline(never)
    private static func decodeNamed(_ bytes: UnsafeRawBufferPointer, into row: inout Row, renames: RenameHistory?) -> Bool {
        guard let named = RowCodec.decodeNamed(bytes) else { return false }
        row = renames.map { Row(columns: $0.renamed(named.columns, from: nil), values: named.values) } ?? named
        return true
    }

    @inline(never)
    private static func view(of layout: RowLayout, _ renames: RenameHistory?) -> RowLayout {
        renames?.view(of: layout) ?? layout
    }

    /// Decodes a stored row; nil as ``decode(_:into:renames:layouts:)`` returns false.
    @inline(__always)
    mutating func decode(_ bytes: UnsafeRawBufferPointer, renames: RenameHistory?,
                         layouts: (UInt32) throws -> RowLayout?) rethrows -> Row? {
        var row = Row()
        return try decode(bytes, into: &row, renames: renames, layouts: layouts) ? row : nil
    }
}
