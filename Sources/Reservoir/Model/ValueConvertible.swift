import Foundation

/// A Swift type with one documented mapping onto a stored ``Value``.
///
/// The row encoder, the row decoder and query operands all use this mapping, so a
/// predicate on a field compares exactly what the field stores. Conforming types:
/// the integer family, `Double`, `Float`, `Bool`, `String`, `Data`, `Date`, `UUID`,
/// `URL`, optionals of these, and any `RawRepresentable` enum whose raw value
/// conforms (declare `extension Status: ValueConvertible {}`).
/// Backends.md lists the mapping of each.
public protocol ValueConvertible: Sendable {
    /// The stored form of this value.
    func toValue() throws -> Value
    /// Reads a stored value back; throws ``ReservoirError`` with code `.typeMismatch`
    /// when `value` cannot represent `Self`.
    static func fromValue(_ value: Value) throws -> Self
}

extension ValueConvertible {
    @usableFromInline
    static func mismatch(_ value: Value, expected: String) -> ReservoirError {
        ReservoirError(.typeMismatch, "cannot read \(value.kindName) value \(value) as \(Self.self); expected \(expected)")
    }
}

// MARK: - Integers

extension ValueConvertible where Self: FixedWidthInteger {
    /// Stored as an integer; throws `.valueOutOfRange` above `Int64.max`.
    @inlinable public func toValue() throws -> Value {
        guard let i = Int64(exactly: self) else {
            throw ReservoirError(.valueOutOfRange, "\(Self.self) value \(self) does not fit a 64-bit signed integer, the largest integer every backend stores")
        }
        return .integer(i)
    }

    /// Reads an integer, or a real with an exact value of this type. The common case is
    /// inlined into the caller; the rest is a call, so the caller stays small enough to inline.
    @inlinable @inline(__always) public static func fromValue(_ value: Value) throws -> Self {
        if case let .integer(i) = value, let v = Self(exactly: i) { return v }
        return try fromOtherValue(value)
    }

    /// ``fromValue(_:)`` for anything but an integer in range.
    @inlinable @inline(never) static func fromOtherValue(_ value: Value) throws -> Self {
        switch value {
        case let .integer(i):
            if let v = Self(exactly: i) { return v }
        case let .real(d):
            // Reals with an exact integer value read as integers (a plain SQL writer may store 3.0).
            if let i = Int64(exactly: d), let v = Self(exactly: i) { return v }
        default:
            break
        }
        throw mismatch(value, expected: "an integer in \(Self.min)...\(Self.max)")
    }
}

extension Int: ValueConvertible {}
extension Int8: ValueConvertible {}
extension Int16: ValueConvertible {}
extension Int32: ValueConvertible {}
extension Int64: ValueConvertible {}
extension UInt: ValueConvertible {}
extension UInt8: ValueConvertible {}
extension UInt16: ValueConvertible {}
extension UInt32: ValueConvertible {}
extension UInt64: ValueConvertible {}

// MARK: - Reals

extension Double: ValueConvertible {
    /// NaN is stored as null, as SQLite stores it; null reads back as NaN.
    @inlinable public func toValue() throws -> Value { isNaN ? .null : .real(self) }

    /// Reads a real or an integer; null reads as NaN.
    @inlinable @inline(__always) public static func fromValue(_ value: Value) throws -> Double {
        if case let .real(d) = value { return d }
        return try fromOtherValue(value)
    }

    /// ``fromValue(_:)`` for anything but a real.
    @inlinable @inline(never) static func fromOtherValue(_ value: Value) throws -> Double {
        switch value {
        case let .real(d): return d
        case let .integer(i): return Double(i)
        case .null: return .nan
        default: throw mismatch(value, expected: "a number")
        }
    }
}

extension Float: ValueConvertible {
    /// Stored as a real.
    @inlinable public func toValue() throws -> Value { try Double(self).toValue() }
    /// Reads a real or an integer, as `Double` does.
    @inlinable public static func fromValue(_ value: Value) throws -> Float { Float(try Double.fromValue(value)) }
}

// MARK: - Bool, String, Data

extension Bool: ValueConvertible {
    /// Stored as integer 0 or 1; any non-zero number reads as true.
    @inlinable public func toValue() throws -> Value { .integer(self ? 1 : 0) }

    /// Reads a number: any non-zero number is true.
    @inlinable public static func fromValue(_ value: Value) throws -> Bool {
        switch value {
        case let .integer(i): return i != 0
        case let .real(d): return d != 0
        default: throw mismatch(value, expected: "integer 0 or 1")
        }
    }
}

extension String: ValueConvertible {
    /// Stored as text, byte for byte.
    @inlinable public func toValue() throws -> Value { .text(self) }

    /// Reads text.
    @inlinable @inline(__always) public static func fromValue(_ value: Value) throws -> String {
        if case let .text(s) = value { return s }
        return try notText(value)
    }

    /// The error for a value that is not text.
    @inlinable @inline(never) static func notText(_ value: Value) throws -> String {
        throw mismatch(value, expected: "text")
    }
}

extension Data: ValueConvertible {
    /// Stored as a blob.
    @inlinable public func toValue() throws -> Value { .blob(self) }

    /// Reads a blob.
    @inlinable public static func fromValue(_ value: Value) throws -> Data {
        switch value {
        case let .blob(d): return d
        default: throw mismatch(value, expected: "a blob")
        }
    }
}

// MARK: - Date, UUID, URL

extension Date: ValueConvertible {
    /// Stored as real seconds since 2001-01-01 00:00:00 UTC (`timeIntervalSinceReferenceDate`,
    /// as Core Data does), so every `Date` round-trips exactly. In SQL:
    /// `datetime(due + 978307200, 'unixepoch')`.
    @inlinable public func toValue() throws -> Value { .real(timeIntervalSinceReferenceDate) }

    /// Reads a number of seconds since 2001-01-01 00:00:00 UTC.
    @inlinable public static func fromValue(_ value: Value) throws -> Date {
        switch value {
        case let .real(d) where !d.isNaN: return Date(timeIntervalSinceReferenceDate: d)
        case let .integer(i): return Date(timeIntervalSinceReferenceDate: Double(i))
        default: throw mismatch(value, expected: "a number of seconds since 2001-01-01")
        }
    }
}

extension UUID: ValueConvertible {
    /// Stored as text in `uuidString` form (upper case, 36 characters); reads
    /// accept either case, and a 16-byte blob.
    @inlinable public func toValue() throws -> Value { .text(uuidString) }

    /// Reads a UUID string in either case, or a 16-byte blob.
    @inlinable public static func fromValue(_ value: Value) throws -> UUID {
        switch value {
        case let .text(s):
            if let uuid = UUID(uuidString: s) { return uuid }
        case let .blob(d) where d.count == 16:
            let b = [UInt8](d)
            return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                               b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
        default:
            break
        }
        throw mismatch(value, expected: "a UUID string")
    }
}

extension URL: ValueConvertible {
    /// Stored as text (`absoluteString`).
    @inlinable public func toValue() throws -> Value { .text(absoluteString) }

    /// Reads URL text.
    @inlinable public static func fromValue(_ value: Value) throws -> URL {
        if case let .text(s) = value, let url = URL(string: s) { return url }
        throw mismatch(value, expected: "URL text")
    }
}

extension Value: ValueConvertible {
    /// A value is stored as itself.
    @inlinable public func toValue() throws -> Value { self }
    /// A value reads as itself.
    @inlinable public static func fromValue(_ value: Value) throws -> Value { value }
}

// MARK: - Optionals and raw-value enums

extension Optional: ValueConvertible where Wrapped: ValueConvertible {
    /// `nil` is stored as null.
    @inlinable public func toValue() throws -> Value {
        switch self {
        case .none: .null
        case let .some(wrapped): try wrapped.toValue()
        }
    }

    /// Null reads as `nil`; anything else as `Wrapped`.
    @inlinable public static func fromValue(_ value: Value) throws -> Wrapped? {
        value.isNull ? nil : try Wrapped.fromValue(value)
    }
}

extension ValueConvertible where Self: RawRepresentable, RawValue: ValueConvertible {
    /// Stored as the raw value.
    @inlinable public func toValue() throws -> Value { try rawValue.toValue() }

    /// Reads the raw value; throws `.typeMismatch` when no case has it.
    @inlinable public static func fromValue(_ value: Value) throws -> Self {
        let raw = try RawValue.fromValue(value)
        guard let v = Self(rawValue: raw) else {
            throw ReservoirError(.typeMismatch, "\(value) is not a raw value of \(Self.self)")
        }
        return v
    }
}

// MARK: - Record ids

extension UUID: RecordID {}
extension String: RecordID {}
extension Int: RecordID {}
extension Int64: RecordID {}
