import BenchSupport
import Reservoir

/// `BENCH_PROFILE=encode:KIND`: the cost of turning records into stored values, alone, with no
/// store and no engine, over the dataset's records (each encoded once a repetition); the
/// writing side of ``DecodeFloor``. KIND:
/// - `floor`: `CodableBenchRecord.encode(to:)` through ``FieldEncoder``, the least an `Encoder`
///   can do (each value kept in the next slot of its type, no column names, no conversion):
///   Swift's `Encodable` machinery itself, the floor of any `Codable` line that writes.
/// - `rowencoder`: the same records through ``RowEncoder``, as a store encodes them.
/// - `storable`: `BenchRecord.makeRow()`, the `@Storable` mapping.
enum EncodeFloor {
    /// The encoding loop for `kind`, its input built beforehand; it returns a checksum of what
    /// it encoded.
    static func loop(_ kind: String, records: ArraySlice<BenchRecord>) throws -> () throws -> Int {
        switch kind {
        case "floor":
            let codable = records.map(CodableBenchRecord.init)
            let encoder = FieldEncoder()
            return {
                var checksum = 0
                for record in codable {
                    encoder.reset()
                    try record.encode(to: encoder)
                    checksum &+= encoder.integers.0 &+ encoder.integers.1 &+ encoder.name.utf8.count
                }
                return checksum
            }
        case "rowencoder":
            let codable = records.map(CodableBenchRecord.init)
            return {
                var checksum = 0
                for record in codable { checksum &+= try RowEncoder().encode(record).count }
                return checksum
            }
        case "storable":
            let storable = Array(records)
            return {
                var checksum = 0
                for record in storable { checksum &+= try record.makeRow().count }
                return checksum
            }
        default:
            throw BenchError("BENCH_PROFILE: unknown encode kind \(kind); expected floor, rowencoder or storable")
        }
    }
}

/// An `Encoder` that does nothing an `Encodable` type does not make it do: each
/// `encode(_:forKey:)` keeps the value in the next slot of its type, which the caller reads.
final class FieldEncoder: Encoder {
    var integers: (Int, Int, Int) = (0, 0, 0)
    var nextInteger = 0
    var name = ""
    var score = 0.0
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func reset() { nextInteger = 0 }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Container<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer { Refused() }
    func singleValueContainer() -> any SingleValueEncodingContainer { Refused() }

    struct Container<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: FieldEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encode(_ value: Int, forKey key: Key) throws {
            defer { encoder.nextInteger += 1 }
            switch encoder.nextInteger {
            case 0: encoder.integers.0 = value
            case 1: encoder.integers.1 = value
            default: encoder.integers.2 = value
            }
        }

        mutating func encode(_ value: String, forKey key: Key) throws { encoder.name = value }
        mutating func encode(_ value: Double, forKey key: Key) throws { encoder.score = value }
        mutating func encodeNil(forKey key: Key) throws { throw BenchError("FieldEncoder: no optional fields") }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            throw BenchError("FieldEncoder: \(T.self) is not a field of the bench record")
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(FieldEncoder.Container<NestedKey>(encoder: encoder))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { Refused() }
        mutating func superEncoder() -> any Encoder { encoder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
    }

    /// The containers the bench record never asks for: any use throws.
    struct Refused: UnkeyedEncodingContainer, SingleValueEncodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int { 0 }
        mutating func encodeNil() throws { throw BenchError("FieldEncoder: keyed only") }
        mutating func encode<T: Encodable>(_ value: T) throws { throw BenchError("FieldEncoder: keyed only") }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(FieldEncoder.Container<NestedKey>(encoder: FieldEncoder()))
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
        mutating func superEncoder() -> any Encoder { FieldEncoder() }
    }
}
