import Foundation
import Reservoir

/// One column's value as it lies in a stored row (see ``RowCodec``): numbers read out,
/// text and blobs left in place as byte ranges, valid as long as the row's bytes are.
///
/// Sorting reads these instead of ``Value``s: no string is built and nothing is retained
/// or released per row, and text compares as the UTF-8 bytes the contract orders it by.
enum StoredField {
    case null
    case integer(Int64)
    case real(Double)
    /// Valid UTF-8.
    case text(UnsafeRawBufferPointer)
    case blob(UnsafeRawBufferPointer)

    /// The value this field holds.
    var value: Value {
        switch self {
        case .null: .null
        case let .integer(i): .integer(i)
        case let .real(r): .real(r)
        // Checked when the field was read.
        case let .text(utf8): .text(String(decoding: utf8, as: UTF8.self))
        case let .blob(bytes): .blob(Data(bytes))
        }
    }
}

/// Reads one column's field from stored rows of either version without decoding the
/// rest, the way sorting reads its columns: for version 2 rows, the column's position in
/// each layout is found once, and the values before it are stepped over.
struct FieldReader {
    let column: String
    /// The rows' entity's columns renamed in place (nil: never).
    private let renames: RenameHistory?
    /// The column's name as version 1 rows spell it (length varint, then UTF-8); nil when a
    /// rename took that name away, so no such row holds the column.
    private let spelled: [UInt8]?
    /// The last layout's number and the column's position in it (nil: the layout lacks it).
    private var last: (layout: UInt32, position: Int?)?

    init(column: String, renames: RenameHistory? = nil) {
        self.column = column
        self.renames = renames
        spelled = (renames.map { $0.originalName(of: column) } ?? column).map { name in
            var writer = ByteWriter()
            writer.string(name)
            return writer.bytes
        }
    }

    /// The column's field in a stored row: null when the row lacks the column, nil when the
    /// bytes are not a row this library can read or name a layout `layouts` does not know.
    mutating func field(in bytes: UnsafeRawBufferPointer, layouts: (UInt32) throws -> RowLayout?) rethrows -> StoredField? {
        guard let (number, offset) = RowCodec.header(bytes) else {
            guard let spelled else { return RowCodec.decodeNamed(bytes) == nil ? nil : .null }
            return spelled.withUnsafeBytes { RowCodec.namedField($0, in: bytes) }
        }
        let position: Int?
        if let last, last.layout == number {
            position = last.position
        } else {
            guard let found = try layouts(number) else { return nil }
            let layout = renames?.view(of: found) ?? found
            position = layout.columns.firstIndex(of: column)
            last = (number, position)
        }
        guard let position else { return .null }
        var reader = ByteReader(bytes)
        reader.offset = offset
        for _ in 0..<position {
            guard reader.skipValue() else { return nil }
        }
        return RowCodec.readField(&reader)
    }
}

extension RowCodec {
    /// The field of the column whose spelled name is `name` (length varint and UTF-8) in a
    /// version 1 row: null when the row lacks the column, nil when the bytes are not such a row.
    static func namedField(_ name: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer) -> StoredField? {
        var reader = ByteReader(bytes)
        guard reader.byte() == namedVersion, let count = reader.varint() else { return nil }
        for _ in 0..<count {
            if reader.skip(matching: name) { return readField(&reader) }
            guard reader.skipLengthPrefixed(), reader.skipValue() else { return nil }
        }
        return reader.isAtEnd ? .null : nil
    }

    /// Reads one tagged value (see ``RowCodec``) as a field; nil when it is damaged,
    /// including text that is not UTF-8, so sorting rejects exactly the rows decoding would.
    @inline(__always)
    static func readField(_ reader: inout ByteReader) -> StoredField? {
        let field = readTagged(&reader)
        if case let .text(utf8)? = field, !isASCII(utf8), decodeUTF8(utf8) == nil { return nil }
        return field
    }
}
