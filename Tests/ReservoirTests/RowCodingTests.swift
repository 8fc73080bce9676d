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
