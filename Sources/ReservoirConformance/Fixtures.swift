import Foundation
import Reservoir

/// A record with nullable and indexed fields, for queries and CRUD.
/// `group` is an SQL keyword on purpose: backends must quote names.
struct Item: Storable {
    var id: Int
    var name: String
    var score: Double?
    var rank: Int?
    var group: String?
    /// Stored but not queryable: queries naming it must fail cleanly.
    var note: String = ""

    static let schema = Schema<Item>("conformance_items", fields: [
        .field(\.id), .field(\.name), .field(\.score, indexed: true), .field(\.rank), .field(\.group, indexed: true),
    ])
}

/// Every supported Swift field type.
struct AllTypes: Storable {
    enum Color: String, Codable, Sendable, ValueConvertible { case red, green, blue }
    enum Level: Int, Codable, Sendable, ValueConvertible { case low = 1, high = 9 }
    struct Nested: Codable, Equatable, Sendable {
        var label: String
        var values: [Int]
        var inner: [String: Double]
    }

    var id: UUID
    var int: Int
    var int8: Int8
    var int16: Int16
    var int32: Int32
    var int64: Int64
    var uint: UInt
    var uint8: UInt8
    var uint16: UInt16
    var uint32: UInt32
    var uint64: UInt64
    var double: Double
    var float: Float
    var bool: Bool
    var string: String
    var data: Data
    var date: Date
    var url: URL
    var color: Color
    var level: Level
    var optionalInt: Int?
    var optionalString: String?
    var optionalDate: Date?
    var optionalColor: Color?
    var nested: Nested
    var list: [String]

    static let schema = Schema<AllTypes>("conformance_all_types", fields: [
        .field(\.int), .field(\.string, indexed: true), .field(\.double), .field(\.date),
        .field(\.bool), .field(\.color), .field(\.optionalInt), .field(\.data),
    ])

    static func sample(_ n: Int) -> AllTypes {
        AllTypes(
            id: UUID(), int: n, int8: Int8(truncatingIfNeeded: n), int16: -16, int32: 32, int64: Int64(n) * 1_000_000_007,
            uint: 7, uint8: 255, uint16: 65535, uint32: UInt32.max, uint64: UInt64(Int64.max),
            double: Double(n) + 0.25, float: 1.5, bool: n % 2 == 0, string: "item \(n)", data: Data([0, 1, 2, UInt8(n & 0xFF)]),
            date: Date(timeIntervalSinceReferenceDate: 800_000_000.123456 + Double(n)),
            url: URL(string: "https://example.com/items/\(n)?q=a%20b") ?? URL(fileURLWithPath: "/"),
            color: .green, level: .high, optionalInt: n % 3 == 0 ? nil : n, optionalString: nil,
            optionalDate: n % 2 == 0 ? nil : Date(timeIntervalSinceReferenceDate: -1e9),
            optionalColor: n % 2 == 0 ? .blue : nil,
            nested: Nested(label: "n\(n)", values: [n, -n], inner: ["x": 0.5]), list: ["a", "b \(n)"]
        )
    }
}

/// Version 1 and 2 of one entity, for "a field added later reads as nil".
struct EvolvingV1: Storable {
    var id: String
    var title: String
    static let schema = Schema<EvolvingV1>("conformance_evolving", fields: [.field(\.title)])
}

struct EvolvingV2: Storable {
    var id: String
    var title: String
    var rating: Int?
    var tags: [String]?
    static let schema = Schema<EvolvingV2>("conformance_evolving", fields: [.field(\.title), .field(\.rating, indexed: true)])
}

/// A raw entity written through rows, for cases the typed API cannot express
/// (mixed storage classes in one column).
let rawEntity = EntityDescription(name: "conformance_raw", idColumn: "id", fields: ["id", "a", "b", "c"], indexes: ["a"])

extension Store {
    func insertItems(_ items: [Item]) throws {
        try write { tx in for item in items { try tx.insert(item) } }
    }

    func ids(_ request: FetchRequest<Item>) throws -> [Int] {
        try fetch(request).map(\.id)
    }

    func putRows(_ rows: [Row], in entity: EntityDescription) throws {
        try write { tx in for row in rows { try tx.putRow(row, in: entity) } }
    }

    func rawIDs(_ predicate: RowPredicate?, sort: [SortTerm] = [], limit: Int? = nil, offset: Int = 0) throws -> [Value] {
        let query = try Query(entity: rawEntity, predicate: predicate, sort: sort, limit: limit, offset: offset)
        return try read { try $0.rows(query) }.map { $0.value("id") }
    }
}

/// Items with nulls, duplicates and text edge cases.
let standardItems: [Item] = [
    Item(id: 1, name: "apple", score: 2.5, rank: 1, group: "fruit"),
    Item(id: 2, name: "Apple", score: nil, rank: 2, group: "fruit"),
    Item(id: 3, name: "banana", score: 2.5, rank: nil, group: nil),
    Item(id: 4, name: "Banana split", score: -1, rank: 3, group: "dessert"),
    Item(id: 5, name: "", score: 0, rank: 0, group: ""),
    Item(id: 6, name: "été", score: 10, rank: nil, group: "fruit"),
    Item(id: 7, name: "e\u{301}te\u{301}", score: nil, rank: 5, group: "dessert"),
    Item(id: 8, name: "100%_match", score: 1e300, rank: -7, group: "Fruit"),
    Item(id: 9, name: "appletree", score: -0.0, rank: 1, group: "fruit"),
]
