import Foundation
import Reservoir
import ReservoirConformance
import Testing
@testable import ReservoirLMDB

/// Random rows and random queries: the LMDB backend (index narrowing or scan) must return
/// exactly what the reference evaluator returns over all rows.
@Suite struct DifferentialTests {
    static let entity = EntityDescription(name: "mixed", idColumn: "id", fields: ["id", "a", "b"], indexes: ["a"])

    static let pool: [Value] = [
        .null, .integer(-2), .integer(0), .integer(1), .integer(2), .integer(1 << 53), .integer(1 << 53 + 1),
        .real(-2.0), .real(0.5), .real(1.0), .real(-0.0), .real(9_007_199_254_740_992.0), .real(1.5),
        .text(""), .text("a"), .text("ab"), .text("b"), .text("é"), .text("e\u{301}"), .text("a\u{0}"),
        .blob(Data()), .blob(Data([0])), .blob(Data([1, 2])),
    ]

    static func pick(_ g: inout SeededGenerator) -> Value { pool[Int(g.next() % UInt64(pool.count))] }

    static func predicate(_ g: inout SeededGenerator, depth: Int = 0) -> RowPredicate {
        let column = ["a", "b", "a", "id"][Int(g.next() % 4)]
        switch g.next() % (depth > 1 ? 5 : 8) {
        case 0, 1:
            let op = ComparisonOperator.allCases[Int(g.next() % 6)]
            return .compare(column: column, op, pick(&g))
        case 2: return .isIn(column: column, (0..<(g.next() % 4)).map { _ in pick(&g) })
        case 3: return .hasPrefix(column: column, ["", "a", "é", "e"][Int(g.next() % 4)])
        case 4: return .contains(column: column, ["", "b", "\u{0}"][Int(g.next() % 3)])
        case 5: return .and((0..<(g.next() % 3 + 1)).map { _ in predicate(&g, depth: depth + 1) })
        case 6: return .or((0..<(g.next() % 3)).map { _ in predicate(&g, depth: depth + 1) })
        default: return .not(predicate(&g, depth: depth + 1))
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func randomQueriesMatchTheReference(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env")
        defer { backend.close() }
        var g = SeededGenerator(seed: seed)
        var rows: [Value: Row] = [:]
        try backend.write { tx in
            for _ in 0..<120 {
                var id = Self.pick(&g)
                if id.isNull { id = .integer(Int64(g.next() % 1000)) }
                var row = Row([("id", id), ("a", Self.pick(&g)), ("b", Self.pick(&g))])
                if g.next() % 5 == 0 { row["a"] = nil }  // a missing column reads as null
                if let old = rows[id] { _ = old }
                rows[id] = row
                try tx.put(Self.entity, id: id, row: row)
            }
            // Delete a few to exercise index maintenance.
            for id in Array(rows.keys).prefix(10) {
                try tx.delete(Self.entity, id: id)
                rows[id] = nil
            }
        }
        for _ in 0..<400 {
            let predicate = g.next() % 10 == 0 ? nil : Self.predicate(&g)
            let sortColumn = ["a", "b", "id"][Int(g.next() % 3)]
            let sort = [SortTerm(column: sortColumn, ascending: g.next() % 2 == 0)]
            let limit: Int? = g.next() % 3 == 0 ? Int(g.next() % 10) : nil
            let query = try Query(entity: Self.entity, predicate: predicate, sort: sort, limit: limit, offset: Int(g.next() % 3))
            let expected = QueryEvaluator.evaluate(query, over: rows.values)
            let actual = try backend.read { try $0.fetch(query) }
            #expect(actual == expected, "\(query)")
            let count = try backend.read { try $0.count(query) }
            #expect(count == expected.count, "count \(query)")
        }
    }

    /// Sorting on an indexed column with a limit reads along the index (ordered scan);
    /// ties, directions, second terms, nulls, missing columns and filters must come out
    /// exactly as the reference has them.
    @Test(arguments: [11, 12])
    func orderedIndexScansMatchTheReference(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env")
        defer { backend.close() }
        var g = SeededGenerator(seed: seed)
        var rows: [Value: Row] = [:]
        try backend.write { tx in
            for i in 0..<200 {
                let id = Value.integer(Int64(i))
                var row = Row([("id", id), ("a", Self.pick(&g)), ("b", Self.pick(&g))])
                if g.next() % 6 == 0 { row["a"] = nil }
                rows[id] = row
                try tx.put(Self.entity, id: id, row: row)
            }
        }
        let predicates: [RowPredicate?] = [
            nil, .not(.compare(column: "b", .equal, .null)), .contains(column: "a", "a"),
            .compare(column: "b", .notEqual, .integer(1)), .constant(true),
        ]
        for predicate in predicates {
            for sort in [[SortTerm(column: "a")], [SortTerm(column: "a", ascending: false)],
                         [SortTerm(column: "a"), SortTerm(column: "b", ascending: false)],
                         [SortTerm(column: "a", ascending: false), SortTerm(column: "b")]] {
                for (limit, offset) in [(0, 0), (1, 0), (5, 3), (17, 0), (50, 40), (500, 0)] {
                    let query = try Query(entity: Self.entity, predicate: predicate, sort: sort, limit: limit, offset: offset)
                    let expected = QueryEvaluator.evaluate(query, over: rows.values)
                    #expect(try backend.read { try $0.fetch(query) } == expected, "\(query)")
                }
            }
        }
    }

    /// Columns holding only integers or only reals take the typed sort path.
    @Test func homogeneousColumnsSortLikeTheReference() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env")
        defer { backend.close() }
        let entity = EntityDescription(name: "typed", idColumn: "id", fields: ["id", "r", "i"])
        var g = SeededGenerator(seed: 42)
        let reals: [Double] = [-0.0, 0.0, 1.5, -2.25, 1e300, -.infinity, .infinity, 7]
        var rows: [Row] = []
        for id in 0..<300 {
            rows.append(Row([("id", .integer(Int64(id))), ("r", .real(reals[Int(g.next() % 8)])), ("i", .integer(Int64(g.next() % 5) - 2))]))
        }
        try backend.write { tx in for row in rows { try tx.put(entity, id: row.value("id"), row: row) } }
        for sort in [[SortTerm(column: "r")], [SortTerm(column: "r", ascending: false)], [SortTerm(column: "i"), SortTerm(column: "r", ascending: false)],
                     [SortTerm(column: "i", ascending: false)], [SortTerm(column: "id", ascending: false)]] {
            let query = try Query(entity: entity, sort: sort)
            #expect(try backend.read { try $0.fetch(query) } == QueryEvaluator.evaluate(query, over: rows), "\(query)")
        }
    }
}
