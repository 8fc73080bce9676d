import Foundation
import Reservoir

/// What a column holds, and so its PostgreSQL type.
///
/// A column takes the native type of the first value written to it: `bigint`, `double
/// precision`, `text COLLATE "C"` (byte order, as the contract sorts text) or `bytea`, so
/// `psql` shows ordinary rows. Reservoir's values are dynamically typed, though: when a
/// value of another kind arrives (a text in an integer column, or a text holding a NUL
/// character, which PostgreSQL's `text` cannot store), the column is rewritten once as
/// **mixed**: `bytea` holding ``KeyEncoding``'s order-preserving bytes, so comparisons and
/// `ORDER BY` on the bytes give exactly the contract's order across kinds, followed (except
/// by one byte keeping the value's kind (0 text or blob, 1 integer, 2 real, 3 the real -0.0), since
/// `KeyEncoding` writes `1` and `1.0` alike. Equality is then a range (the encodings that
/// start with the value's), which also finds an id whatever its spelling.
enum ColumnKind: String, Sendable, Hashable {
    case integer = "i"
    case real = "r"
    case text = "t"
    case blob = "b"
    case mixed = "m"

    /// The column type in `CREATE TABLE` / `ADD COLUMN`.
    var columnType: String {
        switch self {
        case .integer: "bigint"
        case .real: "double precision"
        case .text: "text COLLATE \"C\""
        case .blob, .mixed: "bytea"
        }
    }

    /// The type a parameter for this column is cast to.
    var castType: String {
        switch self {
        case .integer: "bigint"
        case .real: "float8"
        case .text: "text"
        case .blob, .mixed: "bytea"
        }
    }

    /// The kind a column holding only `value` would have (nil for null).
    init?(of value: Value) {
        switch value {
        case .null: return nil
        case .integer: self = .integer
        case let .real(real): if real.isNaN { return nil } else { self = .real }
        case let .text(text): self = containsNUL(text) ? .mixed : .text
        case .blob: self = .blob
        }
    }

    /// Where the kind falls in the contract's order of kinds: numbers, then text, then blobs.
    var rank: Int? {
        switch self {
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        case .mixed: nil
        }
    }
}

/// Values to and from the columns they are stored in.
enum ColumnCodec {
    /// `value` as a parameter for a column of `kind`, or nil when the column cannot hold it
    /// as it is (the column must become mixed first). Integral reals go into integer id
    /// columns as integers, and integers that are exact doubles into real id columns: equal
    /// ids are one record whatever their spelling.
    static func parameter(_ value: Value, kind: ColumnKind, isID: Bool) -> PGParameter? {
        switch (value, kind) {
        case (.null, _):
            return .null
        case let (.real(real), _) where real.isNaN:
            return .null
        case let (.integer(integer), .integer):
            return .integer(integer)
        case let (.real(real), .real):
            return .real(real)
        case let (.text(text), .text):
            return containsNUL(text) ? nil : .text(text)
        case let (.blob(data), .blob):
            return PGParameter(blob: data)
        case (_, .mixed):
            return .bytes(mixed(value))
        case let (.real(real), .integer) where isID:
            return Int64(exactly: real).map { .integer($0) }
        case let (.integer(integer), .real) where isID:
            return Double(exactly: integer).map { .real($0) }
        default:
            return nil
        }
    }

    static func mixed(_ value: Value) -> [UInt8] {
        var bytes = KeyEncoding.encode(value)
        switch value {
        case .integer: bytes.append(1)
        case let .real(real): bytes.append(real == 0 && real.sign == .minus ? 3 : 2)
        default: bytes.append(0)
        }
        return bytes
    }

    /// The condition selecting the row whose `column` (of `kind`) equals `value`, with its
    /// parameters numbered from `$1`; nil when no value of that column can equal it.
    static func equality(_ column: String, kind: ColumnKind, _ value: Value) -> (sql: String, parameters: [PGParameter])? {
        let quoted = Layout.quote(column)
        if kind == .mixed {
            let encoded = KeyEncoding.encode(value)
            return ("\(quoted) >= $1::bytea AND \(quoted) < $2::bytea", [.bytes(encoded), .bytes(encoded + [0xFF])])
        }
        guard let parameter = parameter(value, kind: kind, isID: true) else { return nil }
        if case .null = parameter { return nil }
        return ("\(quoted) = $1::\(kind.castType)", [parameter])
    }

    /// The value of a binary result field of a column of `kind`. Inlined into the loops that
    /// decode every field of every row; a mixed column's decoding stays out of line.
    @inline(__always)
    static func value(_ raw: UnsafeRawBufferPointer, kind: ColumnKind) -> Value? {
        switch kind {
        case .integer:
            guard raw.count == 8 else { return nil }
            return .integer(Int64(bigEndian: raw.loadUnaligned(as: Int64.self)))
        case .real:
            guard raw.count == 8 else { return nil }
            return .real(Double(bitPattern: UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self))))
        case .text:
            return .text(String(decoding: raw, as: UTF8.self))
        case .blob:
            return .blob(Data(raw))
        case .mixed:
            return mixedValue(raw)
        }
    }

    /// A mixed column's field: the ``KeyEncoding`` bytes, then a kind byte (2: a real that
    /// equals an integer, 3: negative zero).
    @inline(never)
    static func mixedValue(_ raw: UnsafeRawBufferPointer) -> Value? {
        guard let kindByte = raw.last else { return nil }
        guard let decoded = KeyEncoding.decode(UnsafeRawBufferPointer(rebasing: raw.dropLast())) else { return nil }
        switch (decoded, kindByte) {
        case let (.integer(integer), 2): return .real(Double(integer))
        case (.integer(0), 3): return .real(-0.0)
        default: return decoded
        }
    }
}

/// Whether `text` holds a NUL character, which PostgreSQL's `text` cannot: a scan of its
/// contiguous bytes (the generic scan of the UTF-8 view cost a bulk load ~500 instructions a value).
func containsNUL(_ text: String) -> Bool {
    text.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? text.utf8.contains(0)
}
