import Foundation
import PropertyBased
import Reservoir
import Testing

private enum Mood: String, Codable, Sendable { case calm, busy }  // not ValueConvertible: stored through its single value
private enum Level: Int, Codable, Sendable, ValueConvertible { case low = 1, high = 2 }
private struct Point: Codable, Equatable, Sendable { var x: Double; var y: Double }

private struct Sample: Storable {
    var id: Int
    var name: String
    var score: Double?
    var flag: Bool
    var when: Date
    var uuid: UUID
    var data: Data
    var mood: Mood
    var level: Level?
    var point: Point
    var tags: [String]
    var big: UInt64
    static let schema = Schema<Sample>("samples", fields: [.field(\.name), .field(\.level)])
}

/// One field of each type `RowDecoder` reads without a nested decoder.
private struct EveryKind: Codable, Equatable {
    var b: Bool, s: String, d: Double, f: Float, i: Int, i8: Int8, i16: Int16, i32: Int32, i64: Int64
    var u: UInt, u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64
}

/// ``EveryKind`` with every field optional, decoded through `decodeIfPresent`.
private struct EveryKindOptional: Codable, Equatable {
    var b: Bool?, s: String?, d: Double?, f: Float?, i: Int?, i8: Int8?, i16: Int16?, i32: Int32?, i64: Int64?
    var u: UInt?, u8: UInt8?, u16: UInt16?, u32: UInt32?, u64: UInt64?
}

private func sample() -> Sample {
    Sample(id: 7, name: "seven", score: nil, flag: true, when: Date(timeIntervalSinceReferenceDate: 123.456),
           uuid: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), data: Data([1, 2]),
           mood: .busy, level: .high, point: Point(x: 1, y: -2.5), tags: ["a", "b"], big: 42)
}

@Suite("Row coding")
struct RowCodingTests {
    @Test("each field maps to its documented value")
    func documentedMapping() throws {
        let row = try RowEncoder().encode(sample())
        #expect(row.columns == ["id", "name", "score", "flag", "when", "uuid", "data", "mood", "level", "point", "tags", "big"])
        #expect(row["id"]?.isIdentical(to: .integer(7)) == true)
        #expect(row["score"]?.isNull == true, "nil optionals are stored as null columns")
        #expect(row["flag"]?.isIdentical(to: .integer(1)) == true)
        #expect(row["when"]?.isIdentical(to: .real(123.456)) == true)
        #expect(row["uuid"]?.isIdentical(to: .text("01020304-0506-0708-090A-0B0C0D0E0F10")) == true)
        #expect(row["data"]?.isIdentical(to: .blob(Data([1, 2]))) == true)
        #expect(row["mood"]?.isIdentical(to: .text("busy")) == true, "a raw-value enum stores its raw value")
        #expect(row["level"]?.isIdentical(to: .integer(2)) == true)
        #expect(row["point"]?.isIdentical(to: .text(#"{"x":1,"y":-2.5}"#)) == true, "nested values are sorted-key JSON text")
        #expect(row["tags"]?.isIdentical(to: .text(#"["a","b"]"#)) == true)
        #expect(row["big"]?.isIdentical(to: .integer(42)) == true)
    }

    @Test("a position hint finds its column there, and any column anywhere else")
    func positionHint() throws {
        let row = Row(columns: ["a", "b", "c"], values: [1, 2, 3])
        #expect(row.value("b", at: 1).isIdentical(to: 2))
        for position in [-1, 0, 2, 3, 99, nil] {
            #expect(row.value("b", at: position).isIdentical(to: 2), "hint \(String(describing: position))")
            #expect(row.value("z", at: position).isNull)
        }
        #expect(try row.decode("c", as: Int.self, at: 0) == 3)
        #expect(try row.decode("a", at: 0) as Int64 == 1)
    }

    @Test("encode then decode gives the record back")
    func roundTrip() throws {
        let original = sample()
        let decoded = try RowDecoder().decode(Sample.self, from: RowEncoder().encode(original))
        #expect(decoded == original)
    }

    @Test("a missing optional column decodes as nil; a missing required one names the column")
    func missingColumns() throws {
        var row = try RowEncoder().encode(sample())
        row["level"] = nil
        #expect(try RowDecoder().decode(Sample.self, from: row).level == nil)
        row["name"] = nil
        let error = #expect(throws: ReservoirError.self) { try RowDecoder().decode(Sample.self, from: row) }
        #expect(error?.code == .typeMismatch)
        #expect(error?.message.contains("\"name\"") == true, "\(String(describing: error))")
    }

    @Test("a stored value of the wrong kind names column, value and type")
    func wrongKind() throws {
        var row = try RowEncoder().encode(sample())
        row["flag"] = .text("yes")
        let error = #expect(throws: ReservoirError.self) { try RowDecoder().decode(Sample.self, from: row) }
        #expect(error?.message.contains("\"flag\"") == true && error?.message.contains("'yes'") == true, "\(String(describing: error))")
    }

    @Test("each field kind reads its value, null as nil when optional, and a wrong kind or range as an error naming the column")
    func everyFieldKind() throws {
        let values: [String: Value] = ["b": 1, "s": .text("x"), "d": .real(2.5), "f": .real(0.5), "i": -3, "i8": -8, "i16": 16,
                                       "i32": 32, "i64": 64, "u": 5, "u8": 255, "u16": 16, "u32": 32, "u64": 64]
        let columns = values.keys.sorted()
        let row = Row(columns: columns, values: columns.compactMap { values[$0] })
        let plain = try RowDecoder().decode(EveryKind.self, from: row)
        #expect(plain == EveryKind(b: true, s: "x", d: 2.5, f: 0.5, i: -3, i8: -8, i16: 16, i32: 32, i64: 64, u: 5, u8: 255, u16: 16, u32: 32, u64: 64))
        let optional = try RowDecoder().decode(EveryKindOptional.self, from: row)
        #expect(optional == EveryKindOptional(b: true, s: "x", d: 2.5, f: 0.5, i: -3, i8: -8, i16: 16, i32: 32, i64: 64, u: 5, u8: 255, u16: 16, u32: 32, u64: 64))
        let nulls = Row(columns: row.columns, values: row.columns.map { _ in .null })
        #expect(try RowDecoder().decode(EveryKindOptional.self, from: nulls) == EveryKindOptional())
        #expect(try RowDecoder().decode(EveryKindOptional.self, from: Row()) == EveryKindOptional(), "missing columns read as nil")
        // A text where a number belongs, a blob anywhere, a number where text belongs, and an
        // integer out of a narrow type's range.
        let narrow: Set = ["i8", "i16", "i32", "u8", "u16", "u32"]
        for column in row.columns {
            let wrongs: [Value] = (column == "s" ? [7] : [.text("wrong")]) + [.blob(Data([1]))] + (narrow.contains(column) ? [1_000_000_000_000] : [])
            for wrong in wrongs {
                var bad = row
                bad[column] = wrong
                for type in [EveryKind.self, EveryKindOptional.self] as [any Decodable.Type] {
                    let error = #expect(throws: ReservoirError.self, "\(column) holding \(wrong) as \(type)") { _ = try RowDecoder().decode(type, from: bad) }
                    #expect(error?.code == .typeMismatch)
                    #expect(error?.message.hasPrefix("column \"\(column)\": ") == true, "\(String(describing: error))")
                }
            }
        }
        // A required field whose column is null or missing names the column.
        for column in row.columns {
            var bad = row
            bad[column] = column == "d" || column == "f" ? .text("x") : .null
            let error = #expect(throws: ReservoirError.self, "\(column)") { try RowDecoder().decode(EveryKind.self, from: bad) }
            #expect(error?.message.hasPrefix("column \"\(column)\": ") == true, "\(String(describing: error))")
        }
    }

    @Test("UInt64 above Int64.max is rejected by name")
    func unsignedOverflow() {
        var record = sample()
        record.big = .max
        let error = #expect(throws: ReservoirError.self) { try RowEncoder().encode(record) }
        #expect(error?.code == .valueOutOfRange)
        #expect(error?.message.contains("18446744073709551615") == true)
    }

    @Test("integers, doubles and strings round-trip for any value")
    func propertyRoundTrip() async {
        await propertyCheck(count: 300, input: Gen.int(in: Int.min...Int.max), Gen.double(in: -1e300...1e300), Gen.latin1.string(of: 0...20)) { n, d, s in
            var record = sample()
            record.id = n
            record.score = d
            record.name = s
            let decoded = try? RowDecoder().decode(Sample.self, from: RowEncoder().encode(record))
            #expect(decoded == record)
        }
    }

    @Test("a schema column that does not match the CodingKeys is reported on first use")
    func schemaMismatch() throws {
        struct Renamed: Storable {
            var id: Int
            var title: String
            enum CodingKeys: String, CodingKey { case id, title = "heading" }
            static let schema = Schema<Renamed>("renamed", fields: [.field(\.title)])
        }
        let store = try Store.open("memory:", registry: BackendRegistry())
        let error = #expect(throws: ReservoirError.self) { try store.write { try $0.insert(Renamed(id: 1, title: "x")) } }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains("heading") == true, "\(String(describing: error))")
        #expect(try store.fetch(Renamed.self).isEmpty, "nothing was written")
    }

    @Test("invalid entity and column names are reported, not crashed on")
    func invalidNames() throws {
        struct Bad: Storable {
            var id: Int
            var title: String
            static let schema = Schema<Bad>("bad name", fields: [.field(\.title, column: "1st"), .field(\.title)])
        }
        let store = try Store.open("memory:", registry: BackendRegistry())
        let error = #expect(throws: ReservoirError.self) { try store.fetch(Bad.self) }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains("bad name") == true && error?.message.contains("1st") == true, "\(String(describing: error))")
    }
}

/// The same entity as `Plain`, mapped by hand instead of through Codable.
private struct Mapped: Storable {
    var id: Int
    var title: String
    var rating: Double?
    var at: Date
    static let schema = Schema<Mapped>("notes", fields: [.field(\.title), .field(\.rating)])
    static let columns = ["id", "title", "rating", "at"]

    func makeRow() throws -> Row {
        Row(columns: Self.columns, values: [try id.toValue(), .text(title), try rating.toValue(), try at.toValue()])
    }

    init(id: Int, title: String, rating: Double?, at: Date) {
        (self.id, self.title, self.rating, self.at) = (id, title, rating, at)
    }

    init(row: borrowing Row) throws {
        self.init(id: try row.decode("id"), title: try row.decode("title"), rating: try row.decode("rating"), at: try row.decode("at"))
    }
}

private struct Plain: Storable {
    var id: Int
    var title: String
    var rating: Double?
    var at: Date
    static let schema = Schema<Plain>("notes", fields: [.field(\.title), .field(\.rating)])
}

/// Reads `notes` through its own init(row:), which the store must call (not Codable's).
/// Spelled without `borrowing`, which satisfies the requirement as well.
private struct Shouting: Storable {
    var id: Int
    var title: String
    static let schema = Schema<Shouting>("notes", fields: [.field(\.title)])
    init(row: Row) throws {
        id = try row.decode("id")
        title = try row.decode("title", as: String.self).uppercased()
    }
}

/// A hand-written mapping whose column disagrees with the schema's field.
private struct Misnamed: Storable {
    var id: Int
    var title: String
    static let schema = Schema<Misnamed>("misnamed", fields: [.field(\.title)])
    func makeRow() throws -> Row { Row(columns: ["id", "name"], values: [try id.toValue(), .text(title)]) }
}

@Suite("Rows mapped by hand")
struct HandMappedRowTests {
    @Test("hand-mapped and Codable records of one entity read each other's rows")
    func interoperate() throws {
        let store = try Store.open("memory:")
        let when = Date(timeIntervalSinceReferenceDate: 1000.25)
        try store.write { tx in
            try tx.insert(Mapped(id: 1, title: "by hand", rating: nil, at: when))
            try tx.insert(Plain(id: 2, title: "codable", rating: 4.5, at: when))
        }
        let mapped = try store.fetch(FetchRequest<Mapped>(sortBy: [.ascending(\.title)]))
        #expect(mapped.map(\.id) == [1, 2])
        #expect(mapped.map(\.rating) == [nil, 4.5])
        #expect(mapped.allSatisfy { $0.at == when })
        let plain = try store.fetch(FetchRequest<Plain>(where: \.rating == nil))
        #expect(plain.map(\.title) == ["by hand"])
        #expect(try store.fetch(Shouting.self).map(\.title) == ["BY HAND", "CODABLE"])
        #expect(try store.get(Shouting.self, id: 2)?.title == "CODABLE")
        #expect(try Mapped(id: 3, title: "t", rating: 1, at: when).makeRow() == RowEncoder().encode(Plain(id: 3, title: "t", rating: 1, at: when)))
    }

    @Test("a hand-written row is checked against the schema, and decode names the column")
    func checked() throws {
        let store = try Store.open("memory:")
        let error = #expect(throws: ReservoirError.self) { try store.write { try $0.insert(Misnamed(id: 1, title: "x")) } }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains("\"title\"") == true, "\(String(describing: error))")
        let row = Row([("id", .integer(1)), ("title", .integer(5)), ("rating", .null), ("at", .real(0))])
        let decodeError = #expect(throws: ReservoirError.self) { try Mapped(row: row) }
        #expect(decodeError?.code == .typeMismatch)
        #expect(decodeError?.message.contains("column \"title\"") == true, "\(String(describing: decodeError))")
    }

    @Test("a column is found by name however either string is stored")
    func columnLookup() {
        // Small strings sharing their first eight bytes, a heap-allocated name, non-ASCII text.
        let names = ["id", "abcdefgh1", "abcdefgh2", "a column name well beyond fifteen bytes", "\u{E9}", "x"]
        func rebuilt(_ name: String) -> String { String(decoding: Array(name.utf8), as: UTF8.self) }
        for columns in [names, names.map(rebuilt), names.reversed()] {
            let row = Row(columns: columns, values: columns.indices.map { .integer(Int64($0)) })
            for name in names {
                let expected = columns.firstIndex(of: name)
                #expect(row.index(of: name) == expected, "\(name) in \(columns)")
                #expect(row.index(of: rebuilt(name)) == expected, "rebuilt \(name) in \(columns)")
                #expect(row.value(name) == .integer(Int64(expected ?? -1)), "\(name) in \(columns)")
            }
            for missing in ["abcdefgh", "abcdefgh3", "a column name well beyond fifteen bytez", ""] {
                #expect(row.index(of: missing) == nil, "\(missing)")
                #expect(row.value(missing) == .null)
            }
        }
    }
}

// MARK: - The encoder reused between records

/// Encodes the columns `keys` names, in that order (a repeated key writes again), each holding
/// its position in `keys` plus `base`; throws after `throwAfter` columns when set.
private struct Shaped: Encodable {
    enum Key: String, CodingKey, CaseIterable { case a, b, c, d }
    var keys: [Int]
    var base = 0
    var throwAfter: Int?

    struct Stop: Error {}

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (position, key) in keys.enumerated() {
            if position == throwAfter { throw Stop() }
            try container.encode(base + position, forKey: Key.allCases[key])
        }
    }

    /// The row a fresh encoder makes: each column where it first appears, with its last value.
    var expected: Row {
        Row(keys.enumerated().map { (Key.allCases[$0.element].rawValue, Value.integer(Int64(base + $0.offset))) })
    }
}

/// What a `Keeper` or `TwoKinds` keeps after its `encode(to:)` returns.
private struct Kept {
    var encoder: (any Encoder)?
    var container: KeyedEncodingContainer<Keeper.Key>?
    var second: KeyedEncodingContainer<TwoKinds.Second>?
}

/// Writes `id`; then, as asked, writes a `note` through the encoder or container an earlier
/// record kept, and keeps its own.
private struct Keeper: Encodable {
    enum Key: String, CodingKey { case id, note }
    var id: Int
    var kept: Locked<Kept>
    var keepEncoder = false
    var keepContainer = false
    var writeThroughKept = false

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(id, forKey: .id)
        if writeThroughKept {
            let earlier = kept.withLock { $0 }
            if var old = earlier.container { try old.encode("through a kept container", forKey: .note) }
            if let old = earlier.encoder {
                var other = old.container(keyedBy: Key.self)
                try other.encode("through a kept encoder", forKey: .note)
            }
        }
        if keepEncoder { kept.withLock { $0.encoder = encoder } }
        if keepContainer { kept.withLock { $0.container = container } }
    }
}

/// Encodes through two keyed containers of different key types, or nests a whole encode; keeps
/// the second container, or writes `c` through one an earlier value kept.
private struct TwoKinds: Encodable {
    enum First: String, CodingKey { case a }
    enum Second: String, CodingKey { case b, c }
    var nested: Bool
    var kept: Locked<Kept>?
    var keepSecond = false

    func encode(to encoder: any Encoder) throws {
        var first = encoder.container(keyedBy: First.self)
        try first.encode(1, forKey: .a)
        if nested {
            let inner = try RowEncoder().encode(Shaped(keys: [0, 1], base: 10))
            try first.encode(inner.count, forKey: .a)
        }
        var second = encoder.container(keyedBy: Second.self)
        try second.encode(2, forKey: .b)
        if var earlier = kept?.withLock({ $0.second }) { try earlier.encode(3, forKey: .c) }
        if keepSecond { kept?.withLock { $0.second = second } }
    }
}

/// Asks for a nested keyed container or a super encoder, which rows cannot hold.
private struct Nests: Encodable {
    enum Key: String, CodingKey { case id, inner }
    var superEncoder: Bool

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(1, forKey: .id)
        if superEncoder {
            var inner = container.superEncoder().container(keyedBy: Key.self)
            try inner.encode(2, forKey: .id)
        } else {
            var inner = container.nestedContainer(keyedBy: Key.self, forKey: .inner)
            try inner.encode(2, forKey: .id)
        }
    }
}

@Suite("RowEncoder between records")
struct RowEncoderReuseTests {
    private func expectRow(_ row: Row, _ expected: Row, _ comment: Comment) {
        #expect(row.columns == expected.columns, comment)
        #expect(row == expected, comment)
    }

    @Test("each value's row has its own columns, whatever order and set the type's last value wrote")
    func shapes() async {
        let records = zip(Gen.int(in: 0...3).array(of: 1...6), Gen.int(in: 0...100)).array(of: 1...12)
        await propertyCheck(count: 200, input: records) { steps in
            for (keys, base) in steps {
                let record = Shaped(keys: keys, base: base)
                let row = try? RowEncoder().encode(record)
                #expect(row?.columns == record.expected.columns, "keys \(keys)")
                #expect(row == record.expected, "keys \(keys)")
            }
        }
    }

    @Test("a value that throws part way leaves the next value's row whole")
    func throwsMidway() throws {
        for keys in [[0, 1, 2], [0, 1, 2, 3], [2, 1]] {
            for throwAfter in 0..<keys.count {
                #expect(throws: Shaped.Stop.self) { try RowEncoder().encode(Shaped(keys: keys, throwAfter: throwAfter)) }
                let record = Shaped(keys: keys, base: 7)
                expectRow(try RowEncoder().encode(record), record.expected, "keys \(keys), thrown after \(throwAfter)")
            }
        }
    }

    @Test("an encoder or container a value keeps writes into no later value's row")
    func keptEncoders() throws {
        for (keepEncoder, keepContainer) in [(true, false), (false, true), (true, true)] {
            let kept = Locked(Kept())
            let first = try RowEncoder().encode(Keeper(id: 1, kept: kept, keepEncoder: keepEncoder, keepContainer: keepContainer))
            expectRow(first, Row([("id", .integer(1))]), "the keeper's own row")
            for id in 2...4 {
                let row = try RowEncoder().encode(Keeper(id: id, kept: kept, writeThroughKept: true))
                expectRow(row, Row([("id", .integer(Int64(id)))]), "kept encoder \(keepEncoder), container \(keepContainer), record \(id)")
            }
            let shaped = Shaped(keys: [3, 2, 1, 0])
            expectRow(try RowEncoder().encode(shaped), shaped.expected, "another type after a kept encoder")
        }
    }

    @Test("two keyed containers, and an encode nested in encode(to:), write one row each")
    func twoContainers() throws {
        for nested in [false, true, false, true] {
            let row = try RowEncoder().encode(TwoKinds(nested: nested))
            expectRow(row, Row([("a", .integer(nested ? 2 : 1)), ("b", .integer(2))]), "nested \(nested)")
            let shaped = Shaped(keys: [0, 1, 2])
            expectRow(try RowEncoder().encode(shaped), shaped.expected, "after nested \(nested)")
        }
        let kept = Locked(Kept())
        _ = try RowEncoder().encode(TwoKinds(nested: false, kept: kept, keepSecond: true))
        for nested in [false, true] {
            let row = try RowEncoder().encode(TwoKinds(nested: nested, kept: kept))
            expectRow(row, Row([("a", .integer(nested ? 2 : 1)), ("b", .integer(2))]), "after a kept second container, nested \(nested)")
        }
    }

    @Test("a nested container or super encoder is refused, and the next value encodes")
    func nestedRefused() throws {
        for superEncoder in [false, true, false] {
            let error = #expect(throws: ReservoirError.self) { try RowEncoder().encode(Nests(superEncoder: superEncoder)) }
            #expect(error?.code == .invalidSchema)
            let shaped = Shaped(keys: [0, 1])
            expectRow(try RowEncoder().encode(shaped), shaped.expected, "after super encoder \(superEncoder)")
        }
    }

    @Test("encodes from several tasks at once each get their own row")
    func concurrent() async throws {
        let shapes: [[Int]] = [[0, 1, 2], [0, 1, 2], [2, 1, 0], [0, 1, 2, 3], [1, 1, 0]]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    let kept = Locked(Kept())
                    for index in 0..<2_000 {
                        let record = Shaped(keys: shapes[(index + task) % shapes.count], base: task * 10_000 + index)
                        let row = try RowEncoder().encode(record)
                        #expect(row.columns == record.expected.columns && row == record.expected, "task \(task), record \(index)")
                        let keeper = try RowEncoder().encode(Keeper(id: index, kept: kept, keepEncoder: index % 5 == 0, keepContainer: index % 3 == 0, writeThroughKept: true))
                        #expect(keeper == Row([("id", .integer(Int64(index)))]), "task \(task), keeper \(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}

// MARK: - The decoder reused between records

/// Reads the columns `a` to `d` as optional integers, in that order, whatever order the row holds
/// them in; `throwAt` makes it throw before reading that column.
private struct Columns: Decodable, Equatable {
    enum Key: String, CodingKey, CaseIterable { case a, b, c, d }
    var values: [Int?]

    struct Stop: Error {}

    init(values: [Int?]) { self.values = values }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let throwAt = try container.decodeIfPresent(Int.self, forKey: .a) == -1 ? 2 : nil
        values = [try container.decodeIfPresent(Int.self, forKey: .a)]
        for key in Key.allCases.dropFirst() {
            if values.count == throwAt { throw Stop() }
            values.append(try container.decodeIfPresent(Int.self, forKey: key))
        }
    }

    /// A row holding `columns` (indexes into `Key`) in that order, each with its position plus `base`.
    static func row(_ columns: [Int], base: Int) -> (Row, Columns) {
        var expected = Columns(values: [nil, nil, nil, nil])
        var pairs: [(String, Value)] = []
        for (position, column) in columns.enumerated() where !pairs.contains(where: { $0.0 == Key.allCases[column].rawValue }) {
            pairs.append((Key.allCases[column].rawValue, .integer(Int64(base + position))))
            expected.values[column] = base + position
        }
        return (Row(pairs), expected)
    }
}

/// What a `Holder` keeps after its `init(from:)` returns.
private struct Held {
    var decoder: (any Decoder)?
    var container: KeyedDecodingContainer<Holder.Key>?
    var first: KeyedDecodingContainer<Pair.First>?
    var second: KeyedDecodingContainer<Pair.Second>?
}

/// Reads `id`; keeps its decoder or container as `keep` says.
private struct Holder: Decodable {
    enum Key: String, CodingKey { case id }
    nonisolated(unsafe) static var keep: (decoder: Bool, container: Bool) = (false, false)
    static let held = Locked(Held())
    var id: Int

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        id = try container.decode(Int.self, forKey: .id)
        let keep = Self.keep
        if keep.decoder { Self.held.withLock { $0.decoder = decoder } }
        if keep.container { Self.held.withLock { $0.container = container } }
    }
}

/// Reads `a` through one key type and `b` through another, keeping the first container when `a`
/// is -2 and the second when it is -1; with `nested`, decodes a `Columns` from a row of its own between them.
private struct Pair: Decodable {
    enum First: String, CodingKey { case a, nested }
    enum Second: String, CodingKey { case b }
    static let held = Locked(Held())
    var a: Int
    var b: Int
    var inner: Columns?

    init(from decoder: any Decoder) throws {
        let first = try decoder.container(keyedBy: First.self)
        a = try first.decode(Int.self, forKey: .a)
        if try first.decodeIfPresent(Bool.self, forKey: .nested) == true {
            inner = try RowDecoder().decode(Columns.self, from: Columns.row([3, 2, 1, 0], base: 100).0)
        }
        let second = try decoder.container(keyedBy: Second.self)
        b = try second.decode(Int.self, forKey: .b)
        if a == -1 { Self.held.withLock { $0.second = second } }
        if a == -2 { Self.held.withLock { $0.first = first } }
    }
}

/// Asks for what rows cannot give: a nested keyed or unkeyed container, or a super decoder.
private struct Asks: Decodable {
    enum Key: String, CodingKey { case id }
    enum What: Int, CaseIterable { case nestedKeyed, nestedUnkeyed, superDecoder, superDecoderForKey, unkeyed, singleValue }
    nonisolated(unsafe) static var what = What.nestedKeyed

    init(from decoder: any Decoder) throws {
        switch Self.what {
        case .unkeyed: _ = try decoder.unkeyedContainer()
        case .singleValue: _ = try decoder.singleValueContainer()
        default: break
        }
        let container = try decoder.container(keyedBy: Key.self)
        _ = try container.decode(Int.self, forKey: .id)
        switch Self.what {
        case .nestedKeyed: _ = try container.nestedContainer(keyedBy: Key.self, forKey: .id)
        case .nestedUnkeyed: _ = try container.nestedUnkeyedContainer(forKey: .id)
        case .superDecoder: _ = try container.superDecoder()
        case .superDecoderForKey: _ = try container.superDecoder(forKey: .id)
        case .unkeyed, .singleValue: break
        }
    }
}

@Suite("RowDecoder between records", .serialized)
struct RowDecoderReuseTests {
    @Test("each row decodes to its own values, whatever columns and order the last row had")
    func shapes() async {
        let rows = zip(Gen.int(in: 0...3).array(of: 0...6), Gen.int(in: 0...100)).array(of: 1...12)
        await propertyCheck(count: 200, input: rows) { steps in
            for (columns, base) in steps {
                let (row, expected) = Columns.row(columns, base: base)
                #expect((try? RowDecoder().decode(Columns.self, from: row)) == expected, "columns \(columns)")
            }
        }
    }

    @Test("a record that throws part way, or a value of the wrong kind, leaves the next record whole, with the same message")
    func throwsMidway() throws {
        let wrongKind = #expect(throws: ReservoirError.self) { try Int.fromValue(.text("x")) }
        let missing = #expect(throws: ReservoirError.self) { try Int.fromValue(.null) }
        for round in 0..<3 {
            let (stopping, _) = Columns.row([0, 1, 2, 3], base: -1)
            #expect(throws: Columns.Stop.self) { try RowDecoder().decode(Columns.self, from: stopping) }
            let typed = #expect(throws: ReservoirError.self) {
                try RowDecoder().decode(Columns.self, from: Row([("a", .integer(1)), ("b", .text("x"))]))
            }
            #expect(typed?.code == .typeMismatch)
            #expect(typed?.message == "column \"b\": " + (wrongKind?.message ?? ""), "round \(round)")
            let absent = #expect(throws: ReservoirError.self) {
                try RowDecoder().decode(Holder.self, from: Row([("other", .integer(1))]))
            }
            #expect(absent?.message == "column \"id\": " + (missing?.message ?? ""), "round \(round)")
            let (row, expected) = Columns.row([2, 0, 1], base: 5)
            #expect(try RowDecoder().decode(Columns.self, from: row) == expected, "round \(round)")
        }
    }

    @Test("a decoder or container a record keeps still reads its own row after later records")
    func keptDecoders() throws {
        for keep in [(true, false), (false, true), (true, true)] {
            Holder.keep = keep
            _ = try RowDecoder().decode(Holder.self, from: Row([("id", .integer(1))]))
            Holder.keep = (false, false)
            for id in 2...4 {
                #expect(try RowDecoder().decode(Holder.self, from: Row([("id", .integer(Int64(id)))])).id == id)
                let (row, expected) = Columns.row([0, 1, 2, 3], base: id)
                #expect(try RowDecoder().decode(Columns.self, from: row) == expected)
            }
            let held = Holder.held.withLock { $0 }
            if let container = held.container {
                #expect(try container.decode(Int.self, forKey: .id) == 1, "kept container, \(keep)")
            }
            if let decoder = held.decoder {
                #expect(try decoder.container(keyedBy: Holder.Key.self).decode(Int.self, forKey: .id) == 1, "kept decoder, \(keep)")
            }
            Holder.held.withLock { $0 = Held() }
        }
    }

    @Test("two key types, a kept first or second container, and a decode nested in init(from:) each read their own row")
    func twoContainers() throws {
        let inner = Columns.row([3, 2, 1, 0], base: 100).1
        for (a, nested) in [(1, false), (2, true), (-1, false), (3, true), (-2, false), (4, false), (5, true)] {
            let row = Row([("a", .integer(Int64(a))), ("nested", .integer(nested ? 1 : 0)), ("b", .integer(Int64(a * 10)))])
            let pair = try RowDecoder().decode(Pair.self, from: row)
            #expect(pair.a == a && pair.b == a * 10 && pair.inner == (nested ? inner : nil), "a \(a), nested \(nested)")
            let (next, expected) = Columns.row([1, 0], base: abs(a))
            #expect(try RowDecoder().decode(Columns.self, from: next) == expected, "after a \(a)")
        }
        #expect(try Pair.held.withLock { $0.second }?.decode(Int.self, forKey: .b) == -10)
        #expect(try Pair.held.withLock { $0.first }?.decode(Int.self, forKey: .a) == -2)
    }

    @Test("nested containers, super decoders and non-keyed tops are refused as before, and the next record decodes")
    func refused() throws {
        let messages: [Asks.What: String] = [
            .nestedKeyed: "column \"id\": nested containers inside a record's init(from:) are not supported; decode a nested Codable value instead",
            .nestedUnkeyed: "column \"id\": nested containers inside a record's init(from:) are not supported; decode an array value instead",
            .superDecoder: "superDecoder() is not supported by records",
            .superDecoderForKey: "superDecoder(forKey:) is not supported by records",
            .unkeyed: "a record decodes from a keyed container (a struct with fields), not an array",
            .singleValue: "a record decodes from a keyed container (a struct with fields), not a single value",
        ]
        for what in Asks.What.allCases + Asks.What.allCases {
            Asks.what = what
            let error = #expect(throws: ReservoirError.self) { try RowDecoder().decode(Asks.self, from: Row([("id", .integer(1))])) }
            #expect(error?.code == .typeMismatch)
            #expect(error?.message == messages[what], "\(what)")
            let (row, expected) = Columns.row([0, 3], base: 1)
            #expect(try RowDecoder().decode(Columns.self, from: row) == expected, "after \(what)")
        }
    }

    @Test("decodes from several tasks at once each read their own row")
    func concurrent() async throws {
        let shapes: [[Int]] = [[0, 1, 2], [0, 1, 2], [2, 1, 0], [0, 1, 2, 3], [3], []]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<2_000 {
                        let (row, expected) = Columns.row(shapes[(index + task) % shapes.count], base: task * 10_000 + index)
                        let decoded = try RowDecoder().decode(Columns.self, from: row)
                        #expect(decoded == expected, "task \(task), record \(index)")
                        if index % 7 == 0 {
                            let pairRow = Row([("a", .integer(Int64(index))), ("nested", .integer(1)), ("b", .integer(Int64(index)))])
                            #expect(try RowDecoder().decode(Pair.self, from: pairRow).b == index, "task \(task), pair \(index)")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
