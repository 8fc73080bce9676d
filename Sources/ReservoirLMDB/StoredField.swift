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

extension RowCodec {
    /// The field of the column whose stored name is `name` (length varint and UTF-8, as
    /// ``ColumnNameCache`` keeps it), read without decoding the other columns: null when
    /// the row lacks the column, nil when the bytes are not a row this version can read.
    static func field(ofColumn name: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer) -> StoredField? {
        var reader = ByteReader(bytes)
        guard let version = reader.byte(), version == Self.version, let count = reader.varint() else { return nil }
        for _ in 0..<count {
            if reader.skip(matching: name) { return readField(&reader) }
            // Another column: step over its name and value (``ByteReader/skipValue()``, written
            // out here because this runs once per column before the sort column in every row).
            guard reader.skipLengthPrefixed(), let raw = reader.byte(), let tag = Tag(rawValue: raw) else { return nil }
            let skipped = switch tag {
            case .null: true
            case .integer: reader.skipVarint()
            case .real: reader.skip(8)
            case .text, .blob: reader.skipLengthPrefixed()
            }
            guard skipped else { return nil }
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
