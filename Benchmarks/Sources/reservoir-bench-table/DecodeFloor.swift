import BenchSupport
import Reservoir

/// `BENCH_PROFILE=decode:KIND`: the cost of turning stored values into a record, alone, with no
/// store and no engine, over the dataset's records (BENCH_RECORDS of them, each decoded once a
/// repetition). KIND:
/// - `floor`: `CodableBenchRecord.init(from:)` through ``FieldDecoder``, the least a `Decoder`
///   that makes a new keyed container a record can do (each field's value handed out by position,
///   no column lookup, no conversion). What this costs a record is Swift's `Decodable` machinery
///   itself with a container box a record; `floor-reused` is the floor of any `Codable` line.
/// - `floor-reused`: the same through ``ReusingFieldDecoder``, which hands every record the one
///   decoder and keyed container, as ``RowDecoder`` does for each thread: the least a `Decoder`
///   that reuses its container can do (no check that the record let go of either).
/// - `rowdecoder`: the same records through ``RowDecoder`` from their rows, as a store reads them.
/// - `storable`: `BenchRecord.init(row:)` from the same rows, the `@Storable` mapping.
enum DecodeFloor {
    /// The decoding loop for `kind`, its input built beforehand (outside any timing); it
    /// returns a checksum of what it decoded.
    static func loop(_ kind: String, records: ArraySlice<BenchRecord>) throws -> () throws -> Int {
        switch kind {
        case "floor":
            let fields = records.map(FieldDecoder.Fields.init)
            return {
                var checksum = 0
                for field in fields {
                    let record = try CodableBenchRecord(from: FieldDecoder(fields: field))
                    checksum &+= record.id &+ record.rank
                }
                return checksum
            }
        case "floor-reused":
            let fields = records.map(FieldDecoder.Fields.init)
            return {
                let decoder = ReusingFieldDecoder()
                var checksum = 0
                for field in fields {
                    decoder.start(field)
                    let record = try CodableBenchRecord(from: decoder)
                    checksum &+= record.id &+ record.rank
                }
                return checksum
            }
        case "rowdecoder":
            let rows = try records.map { try $0.makeRow() }
            return {
                var checksum = 0
                for row in rows {
                    let record = try RowDecoder().decode(CodableBenchRecord.self, from: row)
                    checksum &+= record.id &+ record.rank
                }
                return checksum
            }
        case "storable":
            let rows = try records.map { try $0.makeRow() }
            return {
                var checksum = 0
                for row in rows {
                    let record = try BenchRecord(row: row)
                    checksum &+= record.id &+ record.rank
                }
                return checksum
            }
        default:
            throw BenchError("BENCH_PROFILE: unknown decode kind \(kind); expected floor, floor-reused, rowdecoder or storable")
        }
    }
}

/// A `Decoder` that does nothing a `Decodable` type does not make it do: the record's five
/// values are held as Swift values and each `decode(_:forKey:)` returns the next one of its type.
struct FieldDecoder: Decoder {
    struct Fields {
        var integers: (Int, Int, Int)
        var name: String
        var score: Double

        init(_ record: BenchRecord) {
            integers = (record.id, record.rank, record.group)
            name = record.name
            score = record.score
        }

        init() {
            integers = (0, 0, 0)
            name = ""
            score = 0
        }
    }

    final class Cursor {
        var fields: Fields
        var nextInteger = 0
        init(_ fields: Fields) { self.fields = fields }
    }

    let fields: Fields
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Container<Key>(cursor: Cursor(fields)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw BenchError("FieldDecoder: keyed only") }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw BenchError("FieldDecoder: keyed only") }

    struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let cursor: Cursor
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }

        func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
            defer { cursor.nextInteger += 1 }
            switch cursor.nextInteger {
            case 0: return cursor.fields.integers.0
            case 1: return cursor.fields.integers.1
            default: return cursor.fields.integers.2
            }
        }

        func decode(_ type: String.Type, forKey key: Key) throws -> String { cursor.fields.name }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { cursor.fields.score }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            throw BenchError("FieldDecoder: \(T.self) is not a field of the bench record")
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw BenchError("FieldDecoder: no nested containers")
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw BenchError("FieldDecoder: no nested containers")
        }

        func superDecoder() throws -> any Decoder { throw BenchError("FieldDecoder: no super decoder") }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw BenchError("FieldDecoder: no super decoder") }
    }
}

/// ``FieldDecoder`` handing every record the same decoder, cursor and keyed container (kept as
/// the box a `KeyedDecodingContainer` is), with no check that the record let go of them: what
/// ``RowDecoder``'s reuse leaves a record to pay, less its checks.
final class ReusingFieldDecoder: Decoder {
    let cursor = FieldDecoder.Cursor(FieldDecoder.Fields())
    private var keyed: AnyObject?
    private var keyedType: ObjectIdentifier?

    func start(_ fields: FieldDecoder.Fields) {
        cursor.fields = fields
        cursor.nextInteger = 0
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if let keyed, keyedType == ObjectIdentifier(Key.self) {
            return unsafeBitCast(keyed, to: KeyedDecodingContainer<Key>.self)
        }
        let container = KeyedDecodingContainer(FieldDecoder.Container<Key>(cursor: cursor))
        keyed = unsafeBitCast(container, to: AnyObject.self)
        keyedType = ObjectIdentifier(Key.self)
        return container
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw BenchError("FieldDecoder: keyed only") }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw BenchError("FieldDecoder: keyed only") }
}
