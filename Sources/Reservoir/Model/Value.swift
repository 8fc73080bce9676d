import Foundation

/// One stored field value: the five storage classes every backend keeps.
///
/// Values have a single total order, the one SQLite uses, and every backend sorts
/// and compares by it:
///
///     null < numbers (integer and real, compared numerically) < text (UTF-8 bytes) < blob (bytes)
///
/// `==` is equality *in that order*: `.integer(1) == .real(1.0)`, and two texts are
/// equal only when their UTF-8 bytes are (Swift's `String ==` would also equate
/// canonically equivalent strings such as "é" and "e\u{301}"; the contract does not).
/// Use ``isIdentical(to:)`` to ask whether two values are the same stored value.
///
/// A real NaN orders below every other number and equals only NaN; the row
/// encoder never produces one (it stores NaN as null, as SQLite does).
public enum Value: Sendable {
    /// No value: a nil optional, a missing column, or NaN.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A double-precision real; a stored real is never NaN.
    case real(Double)
    /// Text, compared by its UTF-8 bytes and never normalised.
    case text(String)
    /// Bytes, compared byte by byte.
    case blob(Data)
}

// MARK: - Storage class

extension Value {
    /// The storage classes, in the order they sort.
    public enum StorageClass: Int, Sendable, Comparable, CustomStringConvertible {
        /// Null, which sorts first.
        case null = 0
        /// Integers and reals, compared together by numeric value.
        case number
        /// Text, compared by UTF-8 bytes.
        case text
        /// Blobs, compared by bytes; they sort last.
        case blob

        /// Whether `lhs` sorts before `rhs`: null, number, text, blob.
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The storage class's name.
        public var description: String {
            switch self {
            case .null: "null"
            case .number: "number"
            case .text: "text"
            case .blob: "blob"
            }
        }
    }

    /// The storage class this value sorts in.
    public var storageClass: StorageClass {
        switch self {
        case .null: .null
        case .integer, .real: .number
        case .text: .text
        case .blob: .blob
        }
    }

    /// Whether this is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as every backend stores it: a NaN real becomes null (SQLite stores NaN as
    /// NULL, and the others follow so that all agree). Query operands go through the same
    /// rule, so a NaN operand means null: `\.score == .nan` finds what `\.score == nil` finds.
    @inlinable public var stored: Value {
        if case let .real(real) = self, real.isNaN { return .null }
        return self
    }

    /// The name of the case, for error messages ("integer", "text", …).
    public var kindName: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}

// MARK: - Order

extension Value: Comparable {
    /// Compares two values in the contract's total order.
    ///
    /// Returns a negative number, zero or a positive number as `lhs` sorts before,
    /// together with, or after `rhs`.
    public static func compare(_ lhs: Value, _ rhs: Value) -> Int {
        switch (lhs, rhs) {
        case (.null, .null):
            return 0
        case let (.integer(a), .integer(b)):
            return a < b ? -1 : (a == b ? 0 : 1)
        case let (.real(a), .real(b)):
            return compareReals(a, b)
        case let (.integer(a), .real(b)):
            return compareIntegerToReal(a, b)
        case let (.real(a), .integer(b)):
            return -compareIntegerToReal(b, a)
        case let (.text(a), .text(b)):
            return compareText(a, b)
        case let (.blob(a), .blob(b)):
            return compareBytes(a, b)
        default:
            return lhs.storageClass < rhs.storageClass ? -1 : 1
        }
    }

    /// Whether `lhs` sorts before `rhs` in the one order every backend uses.
    public static func < (lhs: Value, rhs: Value) -> Bool { compare(lhs, rhs) < 0 }

    /// Whether the values are equal in that order: `integer(1) == real(1.0)`, `0.0 == -0.0`.
    public static func == (lhs: Value, rhs: Value) -> Bool { compare(lhs, rhs) == 0 }

    /// Whether both values are the same case with the same payload: the question
    /// "would storing `other` instead of `self` change anything?".
    /// Unlike `==`, `.integer(1)` is not identical to `.real(1.0)`, and `0.0` is not
    /// identical to `-0.0`.
    public func isIdentical(to other: Value) -> Bool {
        switch (self, other) {
        case (.null, .null): true
        case let (.integer(a), .integer(b)): a == b
        case let (.real(a), .real(b)): a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN)
        case let (.text(a), .text(b)): Self.sameBytes(a, b)
        case let (.blob(a), .blob(b)): a == b
        default: false
        }
    }

    /// Byte-wise equality of the UTF-8 (String's `==` is Unicode-canonical equivalence),
    /// over contiguous storage rather than element by element through the UTF-8 views.
    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a
        var b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
    }

    private static func compareReals(_ a: Double, _ b: Double) -> Int {
        if a.isNaN || b.isNaN {
            // NaN sorts below every other number so the order stays total.
            return a.isNaN ? (b.isNaN ? 0 : -1) : 1
        }
        return a < b ? -1 : (a == b ? 0 : 1)
    }

    /// Exact comparison of an integer with a real, without rounding the integer
    /// through Double (2^53 + 1 must compare greater than 2^53 as a real).
    private static func compareIntegerToReal(_ a: Int64, _ b: Double) -> Int {
        if b.isNaN { return 1 }
        // 2^63 is exactly representable; every Int64 is below it.
        if b >= 9_223_372_036_854_775_808.0 { return -1 }
        if b < -9_223_372_036_854_775_808.0 { return 1 }
        let truncated = Int64(b.rounded(.towardZero))
        if a != truncated { return a < truncated ? -1 : 1 }
        let fraction = b - b.rounded(.towardZero)
        return fraction > 0 ? -1 : (fraction < 0 ? 1 : 0)
    }

    /// Texts by their UTF-8 bytes: with `memcmp` over the strings' own storage when both are
    /// native (contiguous), which a byte-by-byte walk of their `utf8` views took about ten
    /// times as long over (sorting a fetch by a text field).
    private static func compareText(_ a: String, _ b: String) -> Int {
        let compared = a.utf8.withContiguousStorageIfAvailable { a in
            b.utf8.withContiguousStorageIfAvailable { b in compareBuffers(a, b) }
        }
        if let compared, let compared { return compared }
        return compareBytes(a.utf8, b.utf8)
    }

    /// Lexicographic order of two byte buffers, a prefix first.
    @inline(__always)
    private static func compareBuffers(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = Swift.min(a.count, b.count)
        if common > 0, let x = a.baseAddress, let y = b.baseAddress {
            let order = memcmp(x, y, common)
            if order != 0 { return order < 0 ? -1 : 1 }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    private static func compareBytes<A: Sequence, B: Sequence>(_ a: A, _ b: B) -> Int
    where A.Element == UInt8, B.Element == UInt8 {
        var ia = a.makeIterator()
        var ib = b.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (x?, y?) where x != y: return x < y ? -1 : 1
            default: continue
            }
        }
    }
}

// MARK: - Hashing consistent with ==

extension Value: Hashable {
    /// Hashes the value so that equal values hash alike (`1` and `1.0` too).
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case let .integer(i):
            hasher.combine(1 as UInt8)
            hasher.combine(i)
        case let .real(d):
            // Equal numbers must hash alike: a real with an exact Int64 value hashes as that integer.
            if d.isNaN {
                hasher.combine(2 as UInt8)
            } else if let i = Int64(exactly: d) {
                hasher.combine(1 as UInt8)
                hasher.combine(i)
            } else {
                hasher.combine(1 as UInt8)
                hasher.combine(d)
            }
        case let .text(s):
            // By UTF-8 bytes (String's own hash follows canonical equivalence, which == does not).
            hasher.combine(3 as UInt8)
            var text = s
            text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(text.utf8.count)
        case let .blob(data):
            hasher.combine(4 as UInt8)
            hasher.combine(data)
        }
    }
}

// MARK: - Literals and description

extension Value: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    /// `nil` is null.
    public init(nilLiteral: ()) { self = .null }
    /// An integer literal is an integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A float literal is a real.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// A string literal is text.
    public init(stringLiteral value: String) { self = .text(value) }
    /// A Boolean literal is the integer 0 or 1.
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension Value: CustomStringConvertible {
    /// A short, SQL-like rendering for messages and tools: `NULL`, `42`, `1.5`,
    /// `'text'`, `x'0aff'`.
    public var description: String {
        switch self {
        case .null: return "NULL"
        case let .integer(i): return String(i)
        case let .real(d): return String(d)
        case let .text(s):
            let shown = s.count > 60 ? String(s.prefix(57)) + "..." : s
            return "'" + shown.replacingOccurrences(of: "'", with: "''") + "'"
        case let .blob(data):
            let hex = data.prefix(32).map { byte in
                let digits = String(byte, radix: 16)
                return byte < 16 ? "0" + digits : digits
            }.joined()
            return "x'" + hex + (data.count > 32 ? "...'" : "'")
        }
    }
}
