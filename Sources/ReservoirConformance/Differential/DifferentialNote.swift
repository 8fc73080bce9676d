import Foundation
import Reservoir

/// The record the differential test writes. Its fields draw from small pools, so random
/// steps collide on ids, tie in sorts and cross predicate, sort and window boundaries often.
public struct DifferentialNote: Storable, CustomStringConvertible {
    public var id: Int
    public var title: String
    public var score: Double?
    public var rank: Int?
    public var tag: String?

    public init(id: Int, title: String, score: Double? = nil, rank: Int? = nil, tag: String? = nil) {
        self.id = id
        self.title = title
        self.score = score
        self.rank = rank
        self.tag = tag
    }

    /// Read column by column (the rows are `Codable`'s, written by the default `makeRow()`), so
    /// the test's fetches also take the path a backend's ``RowReader`` serves, against every
    /// other backend's rows and the model.
    public init(reader: borrowing RowReader) throws {
        self.init(id: try reader.decode("id", at: 0), title: try reader.decode("title", at: 1),
                  score: try reader.decode("score", at: 2), rank: try reader.decode("rank", at: 3),
                  tag: try reader.decode("tag", at: 4))
    }

    public static var readsColumns: Bool { true }

    public static let schema = Schema<DifferentialNote>("differential_notes", fields: [
        .field(\.title), .field(\.score), .field(\.rank, indexed: true), .field(\.tag, indexed: true),
    ])

    /// Swift source that makes this record, for pasteable failure reports.
    public var description: String {
        "DifferentialNote(id: \(id), title: \(SwiftLiteral.string(title)), score: \(SwiftLiteral.double(score)), rank: \(rank.map(String.init) ?? "nil"), tag: \(tag.map(SwiftLiteral.string) ?? "nil"))"
    }

    // MARK: - The requests every replica observes

    /// The fetch requests the test fetches, counts and observes after every step, and that
    /// operations name by position. Each crosses a different boundary: predicates on
    /// indexed and plain fields, nulls, text matching, descending and multi-key sorts,
    /// limits and offsets.
    public static let requests: [FetchRequest<DifferentialNote>] = [
        FetchRequest(),
        FetchRequest(where: \.tag == "a", sortBy: [.descending(\.rank), .ascending(\.title)]),
        FetchRequest(where: \.rank >= 3, sortBy: [.ascending(\.score)], limit: 4),
        FetchRequest(where: .hasPrefix(\.title, "b") || \.score == nil, sortBy: [.descending(\.title)], limit: 3, offset: 2),
        FetchRequest(sortBy: [.ascending(\.rank)], offset: 3),
        FetchRequest(where: \.tag != nil && \.rank < 5, sortBy: [.ascending(\.tag), .descending(\.score)], limit: 3),
        FetchRequest(where: .contains(\.title, "%") || \.score > 1.5 || !(\.rank != 2), sortBy: [.descending(\.score), .ascending(\.tag)], limit: 5, offset: 1),
    ]

    // MARK: - Pools

    static let ids = Array(0..<12)
    static let titles = ["", "a", "b", "ba", "B", "bb", "é", "e\u{301}", "b%_", "a\u{0}b", "z"]
    static let scores: [Double?] = [nil, 0, -0.0, 1.5, 2, -3.25, 1e300, .infinity, -.infinity, .nan, 9_007_199_254_740_992, 0.1]
    static let ranks: [Int?] = [nil, -1, 0, 1, 2, 3, 4, 5, 7, .max, .min]
    static let tags: [String?] = [nil, "a", "b", "A", ""]

    static func random(_ g: inout SeededGenerator) -> DifferentialNote {
        DifferentialNote(id: ids.pick(&g), title: titles.pick(&g), score: scores.pick(&g), rank: ranks.pick(&g), tag: tags.pick(&g))
    }
}

extension Array {
    func pick(_ g: inout SeededGenerator) -> Element { self[Int(g.next() % UInt64(count))] }
}

/// Swift source for values, so a failure prints a case that compiles.
enum SwiftLiteral {
    static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        return out + "\""
    }

    static func double(_ value: Double?) -> String {
        guard let value else { return "nil" }
        if value.isNaN { return "Double.nan" }
        if value.isInfinite { return value < 0 ? "-Double.infinity" : "Double.infinity" }
        return "\(value)"
    }
}
