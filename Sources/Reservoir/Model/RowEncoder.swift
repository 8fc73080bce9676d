import Foundation

/// Encodes an `Encodable` record into a ``Row``, one column per top-level coding key.
///
/// Primitive fields become values directly; ``ValueConvertible`` types use their
/// mapping; types that encode one value through a single-value container
/// (raw-value enums, wrappers) store that value; anything else (structs, arrays,
/// dictionaries) is stored as one JSON text value with sorted keys. `nil` optionals
/// are stored as null columns, so every row of a type has the same columns.
public struct RowEncoder: Sendable {
    /// An encoder.
    public init() {}

    /// The row for `value`, whose encoding must be a keyed container. Values of a type
    /// follow the columns the type's last value wrote: while they do, the row shares that
    /// columns array and no column is searched for.
    public func encode<T: Encodable>(_ value: T) throws -> Row {
        let type = ObjectIdentifier(T.self)
        let spare = spareEncoders.slot()
        var encoder = spare?.take() ?? RowEncoding()
        let layout = encoder.lastType == type ? encoder.lastColumns : Self.layouts.withLock { $0[type] }
        encoder.start(following: layout)
        try value.encode(to: encoder)
        guard encoder.usedKeyedContainer else {
            throw ReservoirError(.invalidSchema, "\(T.self) does not encode as a keyed container (a struct with fields); a record must")
        }
        let row = encoder.builder.finishedRow()
        let changed = layout != row.columns
        if changed {
            Self.layouts.withLock { $0[type] = row.columns }
        }
        // Kept for the thread's next record only when nothing `encode(to:)` was handed is still held.
        if isKnownUniquelyReferenced(&encoder), encoder.kept.keptNothingElse() {
            if changed || encoder.lastType != type {
                encoder.lastType = type
                encoder.lastColumns = row.columns
            }
            spare?.giveBack(encoder)
        }
        return row
    }

    /// Per type: the columns its last value encoded. A bulk insert, which encodes one type
    /// over and over, finds them in its thread's encoder (``RowEncoding/lastColumns``) instead.
    private static let layouts = Locked<[ObjectIdentifier: [String]]>([:])

    static func encodeNested<T: Encodable>(_ value: T, column: String) throws -> Value {
        if let convertible = value as? any ValueConvertible {
            return try convertible.toValue()
        }
        let single = SingleValueEncoding(column: column)
        do {
            try value.encode(to: single)
            if let captured = single.value { return captured }
        } catch is NeedsJSON {
            // fall through to JSON
        }
        let json = JSONEncoder()
        json.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try json.encode(value)
            return .text(String(decoding: data, as: UTF8.self))
        } catch {
            throw ReservoirError(.typeMismatch, "cannot encode column \"\(column)\" of type \(T.self) as JSON: \(error)")
        }
    }
}

extension Value {
    /// The value ``RowEncoder`` stores for a record's field `field` in `column`: a
    /// ``ValueConvertible`` type's own mapping. For `@RowMapped` records and `makeRow()`
    /// written by hand.
    @inlinable
    public static func encoding<T: Encodable & ValueConvertible>(_ field: T, column: String) throws -> Value {
        do {
            return try field.toValue()
        } catch let error as ReservoirError {
            throw error.inColumn(column)
        }
    }

    /// The value ``RowEncoder`` stores for a record's field `field` in `column`: a type
    /// with a single-value encoding stores that value, anything else (structs, arrays,
    /// dictionaries) JSON text with sorted keys.
    public static func encoding<T: Encodable>(_ field: T, column: String) throws -> Value {
        do {
            return try RowEncoder.encodeNested(field, column: column)
        } catch let error as ReservoirError {
            throw error.inColumn(column)
        }
    }
}

/// Thrown inside single-value probing when a type needs a keyed or unkeyed container.
struct NeedsJSON: Error {}

// MARK: - Top level

/// The `Encoder` a record's `encode(to:)` is handed. ``RowEncoder/encode(_:)`` keeps one for the
/// thread's next record once nothing else holds it or the keyed container it handed out
/// (``KeptContainer``), so a record costs no encoder and, while its coding keys stay the same
/// type, no new container.
///
/// Used by one `encode` call on one thread at a time, so its mutable state opts out of dynamic
/// exclusivity checks (a runtime call per access, about a tenth of an encode otherwise).
private final class RowEncoding: Encoder {
    /// What the fields are written into: reachable only from this encoder and its keyed containers.
    let builder: RowBuilder
    @exclusivity(unchecked) private(set) var usedKeyedContainer = false
    @exclusivity(unchecked) var kept = KeptContainer()
    /// The record type this encoder last encoded on its thread, and the columns it wrote.
    @exclusivity(unchecked) var lastType: ObjectIdentifier?
    @exclusivity(unchecked) var lastColumns: [String]?

    init(failure: (any Error)? = nil) {
        builder = RowBuilder(failure: failure)
    }

    /// Readies the encoder for a record of a type whose last value wrote `layout`.
    func start(following layout: [String]?) {
        usedKeyedContainer = false
        kept.start()
        builder.start(following: layout)
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        usedKeyedContainer = true
        return kept.container(keyedBy: Key.self, canKeep: encodingContainerIsOneReference) {
            KeyedEncodingContainer(RowKeyedContainer<Key>(builder: builder))
        }
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        FailingUnkeyedContainer(error: builder.failure ?? ReservoirError(.invalidSchema, "a record must encode as a keyed container (a struct with fields), not an array"))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueEncoding(column: "", failure: builder.failure ?? ReservoirError(.invalidSchema, "a record must encode as a keyed container (a struct with fields), not a single value"))
    }
}

/// Each thread's spare ``RowEncoding``.
private let spareEncoders = ThreadSpare<RowEncoding>()

/// Whether ``RowEncoding`` can keep its keyed container (``isOneReference(_:)``).
private let encodingContainerIsOneReference: Bool = {
    enum ProbeKey: CodingKey { case probe }
    return isOneReference(KeyedEncodingContainer(RowKeyedContainer<ProbeKey>(builder: RowBuilder())))
}()

/// The row one record's fields are written into.
private final class RowBuilder {
    /// Set when the record's encoding takes a shape rows cannot hold; every container then throws it.
    let failure: (any Error)?
    @exclusivity(unchecked) private var row = Row()
    /// The columns a record of this type wrote last time, and the values written along them
    /// while this one follows the same order.
    @exclusivity(unchecked) private var layout: [String]?
    @exclusivity(unchecked) private var layoutValues: [Value] = []
    @exclusivity(unchecked) private var followsLayout = false

    init(failure: (any Error)? = nil) {
        self.failure = failure
    }

    func start(following layout: [String]?) {
        self.layout = layout
        followsLayout = layout != nil
        if let layout { layoutValues.reserveCapacity(layout.count) }
    }

    func set(_ column: String, _ value: __owned Value) {
        if followsLayout, let layout, layoutValues.count < layout.count, layout[layoutValues.count] == column {
            layoutValues.append(value)
            return
        }
        if followsLayout, let layout {
            // Off the usual order: carry on with a row built column by column.
            followsLayout = false
            row = Row(columns: Array(layout[..<layoutValues.count]), values: layoutValues)
        }
        row[column] = value
    }

    /// The row written, which the builder lets go of: it is left empty for the next record.
    func finishedRow() -> Row {
        let values = layoutValues
        layoutValues = []
        if followsLayout, let layout, values.count == layout.count {
            return Row(columns: layout, values: values)
        }
        if followsLayout, let layout {
            return Row(columns: Array(layout[..<values.count]), values: values)
        }
        let finished = row
        row = Row()
        return finished
    }
}

private struct RowKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let builder: RowBuilder
    var codingPath: [any CodingKey] { [] }

    /// Stores `value` under `key`, or throws the encoding's failure. The failure is checked
    /// first only where making the value can fail; a value made for nothing costs less than
    /// a closure per field.
    @inline(__always)
    private func set(_ value: __owned Value, _ key: Key) throws {
        if let failure = builder.failure { throw failure }
        builder.set(key.stringValue, value)
    }

    @inline(__always)
    private func set(converting value: () throws -> Value, _ key: Key) throws {
        if let failure = builder.failure { throw failure }
        builder.set(key.stringValue, try value())
    }

    mutating func encodeNil(forKey key: Key) throws { try set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try set(.integer(value ? 1 : 0), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { try set(.text(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try set(try value.toValue(), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try set(converting: { try value.toValue() }, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try set(.integer(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try set(converting: { try value.toValue() }, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try set(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try set(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try set(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try set(converting: { try value.toValue() }, key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try set(converting: { try RowEncoder.encodeNested(value, column: key.stringValue) }, key)
    }

    // Synthesized Codable skips nil optionals through encodeIfPresent; store them as null
    // so every row of a type carries every column. Each overload calls its own type's
    // `encode` (a generic helper would reach the generic one and its dynamic casts).
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(RowKeyedContainer<NestedKey>(builder: RowBuilder(failure: unsupported(key))))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        FailingUnkeyedContainer(error: unsupported(key))
    }

    mutating func superEncoder() -> any Encoder { RowEncoding(failure: unsupported(nil)) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { RowEncoding(failure: unsupported(key)) }

    private func unsupported(_ key: Key?) -> ReservoirError {
        ReservoirError(.invalidSchema, "column \"\(key?.stringValue ?? "super")\": nested containers and superEncoder inside a record's encode(to:) are not supported; encode a nested Codable value instead")
    }
}

// MARK: - Single values (raw-value enums, wrappers)

/// Captures the one value a type encodes through a single-value container; throws
/// ``NeedsJSON`` when the type asks for a keyed or unkeyed container instead.
private final class SingleValueEncoding: Encoder, SingleValueEncodingContainer {
    let column: String
    let failure: (any Error)?
    var value: Value?
    init(column: String, failure: (any Error)? = nil) {
        self.column = column
        self.failure = failure
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RowKeyedContainer<Key>(builder: RowBuilder(failure: failure ?? NeedsJSON())))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { FailingUnkeyedContainer(error: failure ?? NeedsJSON()) }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    private func set(_ v: @autoclosure () throws -> Value) throws {
        if let failure { throw failure }
        value = try v()
    }

    func encodeNil() throws { try set(.null) }
    func encode(_ v: Bool) throws { try set(try v.toValue()) }
    func encode(_ v: String) throws { try set(.text(v)) }
    func encode(_ v: Double) throws { try set(try v.toValue()) }
    func encode(_ v: Float) throws { try set(try v.toValue()) }
    func encode(_ v: Int) throws { try set(try v.toValue()) }
    func encode(_ v: Int8) throws { try set(try v.toValue()) }
    func encode(_ v: Int16) throws { try set(try v.toValue()) }
    func encode(_ v: Int32) throws { try set(try v.toValue()) }
    func encode(_ v: Int64) throws { try set(try v.toValue()) }
    func encode(_ v: UInt) throws { try set(try v.toValue()) }
    func encode(_ v: UInt8) throws { try set(try v.toValue()) }
    func encode(_ v: UInt16) throws { try set(try v.toValue()) }
    func encode(_ v: UInt32) throws { try set(try v.toValue()) }
    func encode(_ v: UInt64) throws { try set(try v.toValue()) }
    func encode<T: Encodable>(_ v: T) throws { try set(try RowEncoder.encodeNested(v, column: column)) }
}

/// Handed out where an array shape is unsupported: throws on first use, so the
/// error surfaces from `encode(to:)` instead of trapping.
private struct FailingUnkeyedContainer: UnkeyedEncodingContainer {
    let error: any Error
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws { throw error }
    mutating func encode(_ value: Bool) throws { throw error }
    mutating func encode(_ value: String) throws { throw error }
    mutating func encode(_ value: Double) throws { throw error }
    mutating func encode(_ value: Float) throws { throw error }
    mutating func encode(_ value: Int) throws { throw error }
    mutating func encode(_ value: Int8) throws { throw error }
    mutating func encode(_ value: Int16) throws { throw error }
    mutating func encode(_ value: Int32) throws { throw error }
    mutating func encode(_ value: Int64) throws { throw error }
    mutating func encode(_ value: UInt) throws { throw error }
    mutating func encode(_ value: UInt8) throws { throw error }
    mutating func encode(_ value: UInt16) throws { throw error }
    mutating func encode(_ value: UInt32) throws { throw error }
    mutating func encode(_ value: UInt64) throws { throw error }
    mutating func encode<T: Encodable>(_ value: T) throws { throw error }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(RowKeyedContainer<NestedKey>(builder: RowBuilder(failure: error)))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { RowEncoding(failure: error) }
}
