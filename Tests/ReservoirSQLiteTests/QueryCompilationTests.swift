import Foundation
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// Differential tests: random rows and random queries, SQLite's compiled SQL against
/// the reference evaluator. Every mismatch reports the seed, the query and both answers.
@Suite struct QueryCompilationTests {
    static let values: [Value] = [
        .null,
        .integer(-3), .integer(0), .integer(1), .integer(2), .integer(3), .integer(.max), .integer(.min),
        .integer(9_007_199_254_740_992), .integer(9_007_199_254_740_993),
        .real(-2.5), .real(0.0), .real(-0.0), .real(1.0), .real(1.5), .real(2.0),
        .real(9_007_199_254_740_992.0), .real(1e300), .real(-.infinity), .real(.infinity),
        .text(""), .text("a"), .text("A"), .text("ab"), .text("abc"), .text("B"), .text("é"), .text("e\u{301}"),
        .text("日本"), .text("a\0b"), .text("a\0"), .text("\0"), .text("Zebra"), .text("zebra"), .text("1"), .text("émile"),
        .text("%"), .text("_a"), .text("a%b"),
        .blob(Data()), .blob(Data([0])), .blob(Data([0x61])), .blob(Data([0xff, 0])),
    ]

    static let fragments = ["", "a", "A", "ab", "b", "é", "e", "\u{301}", "\0", "a\0", "%", "_", "日", "Z", "ze", "1", "abcd"]
    static let columns = ["a", "b", "c", "missing", "id"]

    static func predicate(_ g: inout SeededGenerator, depth: Int) -> RowPredicate {
        let choice = g.int(depth > 0 ? 10 : 7)
        switch choice {
        case 0, 1, 2:
            var operand = g.pick(values)
            if g.int(30) == 0 { operand = .real(.nan) }
            return .compare(column: g.pick(columns), g.pick(ComparisonOperator.allCases), operand)
        case 3:
            return .isIn(column: g.pick(columns), (0..<g.int(4)).map { _ in g.pick(values) })
        case 4:
            return .hasPrefix(column: g.pick(columns), g.pick(fragments))
        case 5:
            return .contains(column: g.pick(columns), g.pick(fragments))
        case 6:
            return .constant(g.int(2) == 0)
        case 7:
            return .and((0..<g.int(4)).map { _ in predicate(&g, depth: depth - 1) })
        case 8:
            return .or((0..<g.int(4)).map { _ in predicate(&g, depth: depth - 1) })
        default:
            return .not(predicate(&g, depth: depth - 1))
        }
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func compiledQueriesMatchTheReferenceEvaluator(seed: UInt64) throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let backend = try SQLiteBackend(path: directory.databasePath)
        defer { backend.close() }
        var g = SeededGenerator(seed: seed)
        let entity = EntityDescription(name: "items", idColumn: "id", fields: ["id", "a", "b", "c"], indexes: ["b"])
        var rows: [Row] = []
        for id in 0..<120 {
            var row = Row([("id", Value.integer(Int64(id)))])
            row["a"] = g.pick(Self.values)
            row["b"] = g.pick(Self.values)
            if g.int(3) != 0 { row["c"] = g.pick(Self.values) }
            rows.append(row)
        }
        try backend.write { tx in
            for row in rows { try tx.put(entity, id: row.value("id"), row: row) }
        }
        for round in 0..<400 {
            let predicate: RowPredicate? = g.int(8) == 0 ? nil : Self.predicate(&g, depth: 3)
            let sort = (0..<g.int(4)).map { _ in SortTerm(column: g.pick(Self.columns), ascending: g.int(2) == 0) }
            let limit: Int? = g.int(3) == 0 ? g.int(30) : nil
            let offset = g.int(4) == 0 ? g.int(50) : 0
            let query = try Query(entity: entity, predicate: predicate, sort: sort, limit: limit, offset: offset)
            let expected = QueryEvaluator.evaluate(query, over: rows).map { $0.value("id") }
            let (actual, count) = try backend.read { reader in
                (try reader.fetch(query).map { $0.value("id") }, try reader.count(query))
            }
            #expect(actual == expected, "seed \(seed) round \(round): \(query)\nexpected \(expected)\nactual   \(actual)")
            #expect(count == expected.count, "seed \(seed) round \(round): count of \(query)")
            if actual != expected { return }
        }
    }

    @Test func storedValuesRoundTripExactly() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let backend = try SQLiteBackend(path: directory.databasePath)
        defer { backend.close() }
        let entity = EntityDescription(name: "values", fields: ["id", "v"])
        for (index, value) in Self.values.enumerated() {
            try backend.write { tx in try tx.put(entity, id: .integer(Int64(index)), row: Row([("id", .integer(Int64(index))), ("v", value)])) }
        }
        try backend.read { reader in
            for (index, value) in Self.values.enumerated() {
                let row = try #require(try reader.row("values", id: .integer(Int64(index))))
                #expect(row.value("v").isIdentical(to: value), "value \(index): stored \(value), read \(row.value("v"))")
            }
        }
    }
}

extension SeededGenerator {
    mutating func int(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func pick<T>(_ items: [T]) -> T { items[int(items.count)] }
}
