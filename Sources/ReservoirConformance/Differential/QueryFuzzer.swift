import Foundation
import Reservoir

/// The query fuzzer: random rows of every storage class and edge value, written as raw rows
/// into two entities (one indexing the queried columns, one not) and changed again so
/// indexes must follow; then random predicates, sorts and windows, each answered by the
/// backend (compiled SQL, an index plan, a scan) and by ``QueryEvaluator`` over the rows
/// the fuzzer wrote. Any difference in rows, order or count fails, naming the query. Each
/// query Swift's types can express is also written as a Foundation `Predicate` with
/// `SortDescriptor`s (``FuzzPredicateForms``), translated by the library and checked the same way.
///
///     try QueryFuzzer(harness: myHarness).run(seed: 7, queries: 500)
public struct QueryFuzzer: Sendable {
    public let harness: ConformanceHarness

    public init(harness: ConformanceHarness) {
        self.harness = harness
    }

    static let indexed = EntityDescription(name: "fuzz_indexed", idColumn: "id", fields: ["id", "a", "b", "c"], indexes: ["a", "b"])
    static let plain = EntityDescription(name: "fuzz_plain", idColumn: "id", fields: ["id", "a", "b", "c"])
    static let columns = ["a", "b", "c", "id"]

    /// Edge values of every storage class: integer/real mixing at 2^53 and the Int64
    /// extremes, signed zero, NaN (stored as null), infinities, empty and NUL-bearing text,
    /// canonically equivalent spellings, case, wildcard characters, blobs.
    static let pool: [Value] = [
        .null,
        .integer(0), .integer(1), .integer(-1), .integer(2), .integer(1 << 53), .integer((1 << 53) + 1),
        .integer(.max), .integer(.min), .integer(.max - 1),
        .real(0), .real(-0.0), .real(1), .real(0.5), .real(-2.5), .real(9_007_199_254_740_992), .real(9_007_199_254_740_994),
        .real(.infinity), .real(-.infinity), .real(.nan), .real(1e300), .real(-1e-300), .real(9.223372036854776e18),
        .text(""), .text("a"), .text("A"), .text("ab"), .text("b"), .text("é"), .text("e\u{301}"), .text("E\u{301}"),
        .text("\u{0}"), .text("a\u{0}"), .text("a\u{0}b"), .text("%"), .text("_"), .text("a%b"), .text("a_b"),
        .text("*"), .text("?"), .text("["), .text("ß"), .text("ss"), .text("\u{1F642}"), .text("1"), .text("1.0"),
        .blob(Data()), .blob(Data([0])), .blob(Data([1, 2])), .blob(Data([0xFF])), .blob(Data("a".utf8)),
    ]

    /// Operands of `hasPrefix` and `contains`: the wildcard characters of LIKE and GLOB, which
    /// must match literally, case variants, NUL and decomposed forms.
    static let patterns = ["", "a", "A", "b", "é", "e", "e\u{301}", "\u{0}", "%", "_", "a%", "a_", "*", "?", "[", "s", "\u{1F642}", "1"]

    /// Writes random rows, changes and deletes some, then checks `queries` random queries on
    /// both entities. Throws a ``ConformanceFailure`` naming the first query answered wrong.
    public func run(seed: UInt64, queries: Int) throws {
        let configuration = try harness.freshConfiguration()
        defer { harness.cleanup(configuration) }
        let store = try Store.open(configuration, registry: harness.registry)
        defer { store.close() }
        var g = SeededGenerator(seed: seed)
        var rows: [Value: Row] = [:]
        for round in 0..<3 {
            var changed: [Row] = []
            var deleted: [Value] = []
            for _ in 0..<(round == 0 ? 120 : 40) { changed.append(Self.randomRow(&g)) }
            if round > 0 {
                for id in rows.keys.sorted().filter({ _ in g.next() % 6 == 0 }) { deleted.append(id) }
            }
            try store.write { tx in
                for entity in [Self.indexed, Self.plain] {
                    for row in changed { try tx.putRow(row, in: entity) }
                    for id in deleted { try tx.deleteRow(id: id, in: entity) }
                }
            }
            for row in changed {
                // The reference holds what the contract says is stored: NaN as null.
                rows[row.value("id")] = Row(columns: row.columns, values: row.values.map(\.stored))
            }
            for id in deleted { rows[id] = nil }
        }
        // The second form's choices come from their own generator, so a seed's queries stay
        // the ones it always generated.
        var forms = SeededGenerator(seed: seed ^ 0x9E37_79B9_7F4A_7C15)
        var bothWays = 0
        for _ in 0..<queries {
            let predicate = g.next() % 12 == 0 ? nil : Self.predicate(&g)
            let sort = (0..<(g.next() % 4)).map { _ in SortTerm(column: Self.columns.pick(&g), ascending: g.next() % 2 == 0) }
            let limit: Int? = g.next() % 3 == 0 ? Int(g.next() % 12) : nil
            let offset = g.next() % 4 == 0 ? Int(g.next() % 8) : 0
            let second = try Self.foundationForm(predicate, sort, &forms)
            if second != nil { bothWays += 1 }
            for entity in [Self.indexed, Self.plain] {
                let query = try Query(entity: entity, predicate: predicate, sort: sort, limit: limit, offset: offset)
                let expected = QueryEvaluator.evaluate(query, over: rows.values)
                let (actual, count) = try store.read { (try $0.rows(query), try $0.count(query)) }
                try expect(Self.same(actual, expected), "seed \(seed): \(query)\n  expected ids \(expected.map { $0.value("id") })\n  got ids      \(actual.map { $0.value("id") })")
                try expectEqual(count, expected.count, "seed \(seed): count of \(query)")
                guard let second else { continue }
                let translated = try Query(entity: entity, predicate: second.predicate, sort: second.sort, limit: limit, offset: offset)
                let label = "seed \(seed): #Predicate form of \(query), translated to \(translated)"
                try expect(Self.same(QueryEvaluator.evaluate(translated, over: rows.values), expected), "\(label): the reference evaluator answers it differently")
                let (actualSecond, countSecond) = try store.read { (try $0.rows(translated), try $0.count(translated)) }
                try expect(Self.same(actualSecond, expected), "\(label)\n  expected ids \(expected.map { $0.value("id") })\n  got ids      \(actualSecond.map { $0.value("id") })")
                try expectEqual(countSecond, expected.count, "count of \(label)")
            }
        }
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *), queries >= 20 {
            try expect(bothWays * 4 >= queries, "seed \(seed): only \(bothWays) of \(queries) queries were expressible as a #Predicate; the second form is not being exercised")
        }
    }

    /// The query's predicate and sort written as a Foundation `Predicate` and `SortDescriptor`s
    /// and translated back by the library, or nil where Swift's types cannot express the predicate.
    static func foundationForm(_ predicate: RowPredicate?, _ sort: [SortTerm], _ g: inout SeededGenerator) throws -> (predicate: RowPredicate?, sort: [SortTerm])? {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return nil }
        let sorted = try FuzzPredicateForms.translated(sort)
        guard let predicate else { return (nil, sorted) }
        return try FuzzPredicateForms.translated(predicate, &g).map { ($0, sorted) }
    }

    /// Rows equal value for value, telling 1 from 1.0 and 0.0 from -0.0: a backend must
    /// return exactly what was stored.
    static func same(_ lhs: [Row], _ rhs: [Row]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { left, right in
            fieldsOf(left).count == fieldsOf(right).count
                && fieldsOf(left).allSatisfy { column, value in value.isIdentical(to: right.value(column)) }
        }
    }

    /// The row's non-null values: a column a row lacks reads as null.
    private static func fieldsOf(_ row: Row) -> [(String, Value)] {
        zip(row.columns, row.values).filter { !$0.1.isNull }.map { ($0.0, $0.1) }
    }

    static func randomRow(_ g: inout SeededGenerator) -> Row {
        // Ids of every storage class but null, none equal to another of a different class
        // (1 and 1.0 name one record, and which spelling a replaced row keeps is not the
        // query semantics this fuzzer checks).
        let n = Int64(g.next() % 160)
        let id: Value = switch g.next() % 8 {
        case 0: .text("t\(n)")
        case 1: .blob(Data([UInt8(n)]))
        case 2: .real(Double(n) + 0.5)
        default: .integer(n - 20)
        }
        var pairs: [(String, Value)] = [("id", id)]
        for column in ["a", "b", "c"] where g.next() % 7 != 0 {  // a missing column reads as null
            pairs.append((column, pool.pick(&g)))
        }
        return Row(pairs)
    }

    static func predicate(_ g: inout SeededGenerator, depth: Int = 0) -> RowPredicate {
        let column = columns.pick(&g)
        switch g.next() % (depth > 2 ? 6 : 10) {
        case 0, 1, 2: return .compare(column: column, ComparisonOperator.allCases.pick(&g), pool.pick(&g))
        case 3: return .isIn(column: column, (0..<(g.next() % 4)).map { _ in pool.pick(&g) })
        case 4: return .hasPrefix(column: column, patterns.pick(&g))
        case 5: return .contains(column: column, patterns.pick(&g))
        case 6: return .and((0..<(g.next() % 3 + 1)).map { _ in predicate(&g, depth: depth + 1) })
        case 7: return .or((0..<(g.next() % 3)).map { _ in predicate(&g, depth: depth + 1) })
        case 8: return .not(predicate(&g, depth: depth + 1))
        default: return .constant(g.next() % 2 == 0)
        }
    }

    // MARK: - Budget

    /// The seeds and queries per seed a test run uses: `count` seeds of `queries` queries
    /// by default; `RESERVOIR_FUZZ_ITERATIONS` sets the total number of queries instead, and
    /// `RESERVOIR_FUZZ_SEED` the first seed.
    public static func budget(defaultSeeds count: Int = 4, queries: Int = 400) -> [(seed: UInt64, queries: Int)] {
        DifferentialTest.budget(defaultSequences: count, steps: queries).map { ($0.seed, $0.steps) }
    }
}
