import Foundation

/// Decodes a ``Row`` back into a `Decodable` record: the inverse of ``RowEncoder``.
///
/// A missing column reads as null, so a field added to a record type after rows
/// were written decodes as `nil` when it is optional. Errors are ``ReservoirError``s
/// with code `.typeMismatch` naming the column, the stored value and the Swift type.
public struct RowDecoder: Sendable {
    /// A decoder.
    public init() {}

    /// The `T` that `row` holds; throws `.typeMismatch` naming the column for a value of the wrong kind.
    /// Each thread keeps its decoder and the keyed container it handed out for its next record,
    /// used again only when the record kept neither.
    public func decode<T: Decodable>(_ type: T.Type, from row: Row) throws -> T {
        let spare = spareDecoders.slot()
        var decoder = spare?.take() ?? RowDecoding()
        decoder.start(row)
        defer {
            // Kept for the thread's next record only when nothing `init(from:)` was handed is still held.
            if isKnownUniquelyReferenced(&decoder), decoder.kept.keptNothingElse() {
                decoder.cursor.finish()
                spare?.giveBack(decoder)
            }
        }
        return try T(from: decoder)
    }

    static func decodeNested<T: Decodable>(_ type: T.Type, from value: Value, column: String) throws -> T {
        do {
            if let convertible = T.self as? any ValueConvertible.Type {
                // The cast cannot fail: `convertible` is `T`'s own metatype.
                guard let decoded = try convertible.fromValue(value) as? T else {
                    throw ReservoirError(.typeMismatch, "internal: \(convertible) did not produce \(T.self)")
                }
                return decoded
            }
            do {
                return try T(from: SingleValueDecoding(value: value, column: column))
            } catch is NeedsJSON {
                guard case let .text(json) = value else {
                    throw ReservoirError(.typeMismatch, "expected JSON text for \(T.self), found \(value.kindName) \(value)")
                }
                return try JSONDecoder().decode(T.self, from: Data(json.utf8))
            }
        } catch let error as ReservoirError {
            throw error.inColumn(column)
        } catch {
            throw ReservoirError(.typeMismatch, "column \"\(column)\": cannot decode \(T.self) from \(value): \(error)")
        }
    }
}

extension ReservoirError {
    /// The same error with the column it concerns named in front, once.
    @usableFromInline
    func inColumn(_ column: String) -> ReservoirError {
        let prefix = "column \"\(column)\": "
        guard !message.hasPrefix(prefix) else { return self }
        var copy = self
        copy.message = prefix + message
        return copy
    }
}

// MARK: - Top level

/// The `Decoder` a record's `init(from:)` is handed. ``RowDecoder/decode(_:from:)`` keeps one for
/// the thread's next record once nothing else holds it or the keyed container it handed out
/// (``KeptContainer``), so a record costs no decoder, no cursor and, while its coding keys stay
/// the same type, no new container.
///
/// Used by one `decode` call on one thread at a time, so its mutable state opts out of dynamic
/// exclusivity checks.
private final class RowDecoding: Decoder {
    /// The row being read: reachable only from this decoder and its keyed containers.
    let cursor = ColumnCursor()
    @exclusivity(unchecked) var kept = KeptContainer()

    /// Readies the decoder for `row`.
    func start(_ row: Row) {
        kept.start()
        cursor.start(row)
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        kept.container(keyedBy: Key.self, canKeep: decodingContainerIsOneReference) {
            KeyedDecodingContainer(RowKeyedDecodingContainer<Key>(cursor: cursor))
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw ReservoirError(.typeMismatch, "a record decodes from a keyed container (a struct with fields), not an array")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw ReservoirError(.typeMismatch, "a record decodes from a keyed container (a struct with fields), not a single value")
    }
}

/// Each thread's spare ``RowDecoding``.
private let spareDecoders = ThreadSpare<RowDecoding>()

/// Whether ``RowDecoding`` can keep its keyed container (``isOneReference(_:)``).
private let decodingContainerIsOneReference: Bool = {
    enum ProbeKey: CodingKey { case probe }
    return isOneReference(KeyedDecodingContainer(RowKeyedDecodingContainer<ProbeKey>(cursor: ColumnCursor())))
}()

/// The row being decoded and where its next column probably is: records decode their
/// fields in the order they were encoded, so trying the column after the last one found
/// usually avoids a search. One reference, so copies of the container (one per field
/// through `KeyedDecodingContainer`'s box) cost one retain.
///
/// The reads are its own methods, not the generic container's, so each field's type is known
/// where its value is converted: its `fromValue` is inlined, with no call through
/// ``ValueConvertible``'s witness table. Used by one `decode` call on one thread at a time, so it
/// opts out of dynamic exclusivity checks.
private final class ColumnCursor {
    @exclusivity(unchecked) private(set) var columns: [String] = []
    @exclusivity(unchecked) private var values: [Value] = []
    @exclusivity(unchecked) private var next = 0

    func start(_ row: Row) {
        columns = row.columns
        values = row.storedValues
        next = 0
    }

    /// Lets go of the row, so a kept decoder holds no record's values.
    func finish() {
        columns = []
        values = []
    }

    @inline(__always)
    func position(of column: String) -> Int? {
        let guess = next
        if guess < columns.count, columns[guess] == column {
            next = guess &+ 1
            return guess
        }
        return search(column)
    }

    @inline(never)
    private func search(_ column: String) -> Int? {
        guard let found = columns.firstIndex(of: column) else { return nil }
        next = found &+ 1
        return found
    }

    func value(_ column: String) -> Value {
        guard let index = position(of: column) else { return .null }
        return values[index]
    }

    /// `column`'s value read as `T`, a missing column as null; an error names the column.
    @inline(__always)
    func read<T: ValueConvertible>(_ type: T.Type, _ column: String) throws -> T {
        guard let index = position(of: column) else { return try Self.converted(.null, column) }
        return try Self.converted(values[index], column)
    }

    /// `column`'s value read as `T`, or nil where it is missing or null (`Optional`'s own
    /// ``ValueConvertible/fromValue(_:)`` reads null as nil).
    @inline(__always)
    func readIfPresent<T: ValueConvertible>(_ type: T.Type, _ column: String) throws -> T? {
        guard let index = position(of: column) else { return nil }
        return try Self.converted(values[index], column) as T?
    }

    @inline(__always)
    private static func converted<T: ValueConvertible>(_ value: Value, _ column: String) throws -> T {
        do {
            return try T.fromValue(value)
        } catch let error as ReservoirError {
            throw error.inColumn(column)
        }
    }
}

private struct RowKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let cursor: ColumnCursor
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] { cursor.columns.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { cursor.position(of: key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { cursor.value(key.stringValue).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try cursor.read(type, key.stringValue) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try cursor.read(type, key.stringValue) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try cursor.read(type, key.stringValue) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try cursor.read(type, key.stringValue) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try cursor.read(type, key.stringValue) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try cursor.read(type, key.stringValue) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try cursor.read(type, key.stringValue) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try cursor.read(type, key.stringValue) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try cursor.read(type, key.stringValue) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try cursor.read(type, key.stringValue) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try cursor.read(type, key.stringValue) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try cursor.read(type, key.stringValue) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try cursor.read(type, key.stringValue) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try cursor.read(type, key.stringValue) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let column = key.stringValue
        return try RowDecoder.decodeNested(type, from: cursor.value(column), column: column)
    }

    // Optionals: one column lookup instead of the default's contains + decodeNil + decode.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try cursor.readIfPresent(type, key.stringValue) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try cursor.readIfPresent(type, key.stringValue) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        let column = key.stringValue
        let stored = cursor.value(column)
        if stored.isNull { return nil }
        return try RowDecoder.decodeNested(type, from: stored, column: column)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw ReservoirError(.typeMismatch, "column \"\(key.stringValue)\": nested containers inside a record's init(from:) are not supported; decode a nested Codable value instead")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw ReservoirError(.typeMismatch, "column \"\(key.stringValue)\": nested containers inside a record's init(from:) are not supported; decode an array value instead")
    }

    func superDecoder() throws -> any Decoder {
        throw ReservoirError(.typeMismatch, "superDecoder() is not supported by records")
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        throw ReservoirError(.typeMismatch, "superDecoder(forKey:) is not supported by records")
    }
}

// MARK: - Single values

/// Decodes a type that reads one value through a single-value container; throws
/// ``NeedsJSON`` when the type asks for a keyed or unkeyed container instead.
private struct SingleValueDecoding: Decoder, SingleValueDecodingContainer {
    let value: Value
    let column: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw NeedsJSON() }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw NeedsJSON() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try .fromValue(value) }
    func decode(_ type: String.Type) throws -> String { try .fromValue(value) }
    func decode(_ type: Double.Type) throws -> Double { try .fromValue(value) }
    func decode(_ type: Float.Type) throws -> Float { try .fromValue(value) }
    func decode(_ type: Int.Type) throws -> Int { try .fromValue(value) }
    func decode(_ type: Int8.Type) throws -> Int8 { try .fromValue(value) }
    func decode(_ type: Int16.Type) throws -> Int16 { try .fromValue(value) }
    func decode(_ type: Int32.Type) throws -> Int32 { try .fromValue(value) }
    func decode(_ type: Int64.Type) throws -> Int64 { try .fromValue(value) }
    func decode(_ type: UInt.Type) throws -> UInt { try .fromValue(value) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try .fromValue(value) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try .fromValue(value) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try .fromValue(value) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try .fromValue(value) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try RowDecoder.decodeNested(type, from: value, column: column) }
}
