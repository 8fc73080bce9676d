import Foundation
import PropertyBased
import Reservoir
import ReservoirMacros
import Testing

private enum Mood: String, Codable, Sendable { case calm, busy }  // not ValueConvertible: stored through its single value
private enum Level: Int, Codable, Sendable, ValueConvertible { case low = 1, high = 2 }
private struct Point: Codable, Equatable, Sendable { var x: Double; var y: Double }

/// Every kind of field a record can have, mapped by the macro; its synthesized `Codable`
/// is the reference the expansion must agree with.
@RowMapped
private struct Sample: Storable {
    var id: Int
    var name: String
    var score: Double?
    var flag: Bool
    var when: Date
    var uuid: UUID
    var data: Data
    var mood: Mood
    var optionalMood: Mood?
    var level: Level?
    var point: Point
    var optionalPoint: Point?
    var tags: [String]
    var big: UInt64
    var small: Int8
    var ratio: Float
    var link: URL?
    var `default`: String
    var observed: Int = 0 {
        didSet { _ = oldValue }
    }
    var computed: String { name.uppercased() }
    static let unrelated = 5
    static let schema = Schema<Sample>("samples", fields: [.field(\.name), .field(\.level), .field(\.observed, column: "observed")])
}

private func sample() -> Sample {
    Sample(id: 7, name: "seven", score: nil, flag: true, when: Date(timeIntervalSinceReferenceDate: 123.456),
           uuid: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), data: Data([1, 2]),
           mood: .busy, optionalMood: nil, level: .high, point: Point(x: 1, y: -2.5), optionalPoint: Point(x: 0, y: 3),
           tags: ["a", "b"], big: 42, small: -8, ratio: 0.5, link: URL(string: "https://example.com/a"), default: "d",
           observed: 9)
}

/// Columns renamed and reordered through `CodingKeys`; `note` is left out of them, and
/// `version`, a `let` with an initial value, is written but never read.
@RowMapped
private struct Renamed: Storable {
    var id: String
    var title: String
    var rank: Int
    var note: String = "not stored"
    let version: Int = 3
    enum CodingKeys: String, CodingKey {
        case rank = "position", id
        case title = "heading", version
    }
    static let schema = Schema<Renamed>("renamed", fields: [.field(\.title, column: "heading"), .field(\.rank, column: "position")])
}

@RowMapped
private struct Box<Content: Codable & Equatable & Sendable>: Storable {
    var id: Int
    var content: Content
    static var schema: Schema<Box<Content>> { Schema("boxes") }
}

@Suite("@RowMapped records")
struct RowMappedRecordTests {
    @Test("rows equal the Codable encoding, column for column, and read back either way")
    func sameRowsAsCodable() throws {
        let record = sample()
        let mapped = try record.makeRow()
        let coded = try RowEncoder().encode(record)
        #expect(mapped.columns == coded.columns)
        #expect(mapped == coded, "\(mapped) against \(coded)")
        #expect(try Sample(row: coded) == record)
        #expect(try RowDecoder().decode(Sample.self, from: mapped) == record)
        #expect(mapped.columns == Sample.rowMappedColumns)
        #expect(!mapped.columns.contains("computed") && !mapped.columns.contains("unrelated"))
        #expect(mapped.columns.contains("default"), "an escaped name is stored without its backticks")
    }

    @Test("a row whose columns are in another order, or missing one, still decodes")
    func otherColumnOrder() throws {
        let record = sample()
        let row = try record.makeRow()
        let reversed = Row(columns: row.columns.reversed(), values: row.values.reversed())
        #expect(try Sample(row: reversed) == record)
        var shorter = Row(Array(zip(row.columns, row.values)).filter { $0.0 != "score" })
        #expect(try Sample(row: shorter) == record, "score was nil, and a missing column reads as null")
        shorter["name"] = nil
        #expect(throws: ReservoirError.self) { try Sample(row: shorter) }
    }

    @Test("CodingKeys rename and order the columns, and leave out the properties they omit")
    func codingKeys() throws {
        let record = Renamed(id: "r", title: "T", rank: 2, note: "kept in memory only")
        let mapped = try record.makeRow()
        #expect(mapped.columns == ["position", "id", "heading", "version"])
        #expect(mapped == (try RowEncoder().encode(record)))
        var changed = mapped
        changed["version"] = 4
        let decoded = try Renamed(row: changed)
        #expect(decoded.title == "T" && decoded.rank == 2 && decoded.note == "not stored" && decoded.version == 3)
        #expect(try RowDecoder().decode(Renamed.self, from: changed).version == 3, "Codable reads it the same way")
    }

    @Test("a generic record maps its generic field like Codable")
    func genericRecord() throws {
        let record = Box(id: 1, content: [Point(x: 1, y: 2)])
        let mapped = try record.makeRow()
        #expect(mapped == (try RowEncoder().encode(record)))
        #expect(try Box<[Point]>(row: mapped) == record)
    }

    @Test("any values of the mapped field kinds give the Codable row and round-trip")
    func propertySameAsCodable() async {
        await propertyCheck(
            count: 300,
            input: Gen.int(in: Int.min...Int.max), Gen.double(in: -1e300...1e300), Gen.latin1.string(of: 0...20), Gen.bool
        ) { n, d, s, b in
            var record = sample()
            record.id = n
            record.score = b ? d : nil
            record.point = Point(x: d, y: -d)
            record.optionalPoint = b ? nil : Point(x: 1, y: d)
            record.name = s
            record.tags = [s, s + s]
            record.optionalMood = b ? .calm : nil
            record.flag = b
            let mapped = try? record.makeRow()
            #expect(mapped != nil && mapped == (try? RowEncoder().encode(record)))
            #expect(mapped.flatMap { try? Sample(row: $0) } == record)
        }
    }

    @Test("a stored value of the wrong kind names the column, the value and the type")
    func wrongKind() throws {
        var row = try sample().makeRow()
        row["flag"] = .text("yes")
        let error = #expect(throws: ReservoirError.self) { try Sample(row: row) }
        #expect(error?.code == .typeMismatch)
        #expect(error?.message.contains("\"flag\"") == true && error?.message.contains("'yes'") == true, "\(String(describing: error))")

        row = try sample().makeRow()
        row["point"] = .text("not json")
        let nested = #expect(throws: ReservoirError.self) { try Sample(row: row) }
        #expect(nested?.message.contains("\"point\"") == true, "\(String(describing: nested))")
    }

    @Test("a missing optional column reads as nil; a missing required one names the column")
    func missingColumns() throws {
        var row = try sample().makeRow()
        row["level"] = nil
        row["optionalPoint"] = nil
        let decoded = try Sample(row: row)
        #expect(decoded.level == nil && decoded.optionalPoint == nil)
        row["name"] = nil
        let error = #expect(throws: ReservoirError.self) { try Sample(row: row) }
        #expect(error?.message.contains("\"name\"") == true, "\(String(describing: error))")
    }

    @Test("a value no backend can store is refused, naming the column")
    func unsignedOverflow() {
        var record = sample()
        record.big = .max
        let error = #expect(throws: ReservoirError.self) { try record.makeRow() }
        #expect(error?.code == .valueOutOfRange)
        #expect(error?.message.contains("\"big\"") == true && error?.message.contains("18446744073709551615") == true,
                "\(String(describing: error))")
    }

    @Test("init(reader:) reads what init(row:) reads from a backend's columns, and fails alike")
    func readerAgreesWithRow() throws {
        let row = try sample().makeRow()
        let reversed = Row(columns: row.columns.reversed(), values: row.values.reversed())
        var shorter = Row(Array(zip(row.columns, row.values)).filter { $0.0 != "score" && $0.0 != "level" })
        var wrongKind = row
        wrongKind["flag"] = .text("yes")
        var badJSON = row
        badJSON["point"] = .text("not json")
        var realID = row
        realID["id"] = .real(7)
        var textScore = row
        textScore["score"] = .text("1.5")
        shorter["name"] = nil
        for (what, stored) in [("the record's row", row), ("reversed", reversed), ("a required column missing", shorter),
                               ("a text flag", wrongKind), ("bad JSON", badJSON), ("a real id", realID), ("a text score", textScore)] {
            let expected = outcome { try Sample(row: stored) }
            #expect(outcome { try Sample(reader: RowReader(columns: stored.columns, source: RowColumns(stored))) } == expected, "\(what)")
        }
        #expect(outcome { try Sample(row: row) } == "\(sample())", "the reference decodes the record")
    }

    @Test("a store writes, queries and reads back macro-mapped records", arguments: TestBackend.allCases)
    func throughAStore(backend: TestBackend) throws {
        let (configuration, registry, cleanup) = try backend.fresh()
        defer { cleanup() }
        let store = try Store.open(configuration, registry: registry)
        defer { store.close() }
        var second = sample()
        second.id = 8
        second.name = "eight"
        second.level = .low
        try store.write { transaction in
            try transaction.insert(sample())
            try transaction.insert(second)
            try transaction.insert(Renamed(id: "a", title: "first", rank: 2))
            try transaction.insert(Renamed(id: "b", title: "second", rank: 1))
        }
        #expect(try store.fetch(FetchRequest<Sample>(where: \.level == .low)).map(\.id) == [8])
        #expect(try store.get(Sample.self, id: 7) == sample())
        #expect(try store.fetch(FetchRequest<Renamed>(sortBy: [.ascending(\.rank)])).map(\.title) == ["second", "first"])
        #expect(try store.fetch(FetchRequest<Sample>(sortBy: [.ascending(\.id)])) == [sample(), second])
    }
}

/// A decode's outcome: the record, or the error's code and message.
private func outcome(_ decode: () throws -> Sample) -> String {
    do { return "\(try decode())" } catch let error as ReservoirError { return "\(error.code): \(error.message)" } catch { return "\(error)" }
}

/// A third party's column source that gives only `value(at:)`, so the reader's typed reads
/// take the protocol's defaults.
private final class RowColumns: ColumnSource {
    let row: Row
    init(_ row: Row) { self.row = row }
    func value(at index: Int) -> Value { row.values[index] }
}
