import Foundation
import Reservoir
import ReservoirConformance
import Testing
@testable import ReservoirLMDB

/// The backend's sort (typed keys, radix passes, position as the id tie-break) must give
/// exactly `QueryEvaluator.sorted`'s order, for columns that take each path.
@Suite struct RowSortTests {
    static let integers: [Value] = [.integer(.min), .integer(-1), .integer(0), .integer(1), .integer(255), .integer(256), .integer(1 << 40), .integer(.max)]
    static let reals: [Value] = [.null, .real(.nan), .real(-.infinity), .real(-1e300), .real(-1.5), .real(-0.0), .real(0.0), .real(.leastNonzeroMagnitude), .real(-.leastNonzeroMagnitude), .real(1.5), .real(1e300), .real(.infinity)]
    /// Integers and reals a double holds exactly (the reals' key path).
    static let exactMix: [Value] = reals + [.integer(-(1 << 53)), .integer(-2), .integer(0), .integer(1), .integer(1 << 53)]
    /// Integers beyond 2^53 beside reals: compared as values.
    static let wideMix: [Value] = exactMix + [.integer(1 << 53 + 1), .real(9_007_199_254_740_992.0), .integer(.max)]
    static let anything: [Value] = wideMix + [.text(""), .text("a"), .text("é"), .blob(Data([1]))]

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func sortsLikeTheReference(seed: UInt64) {
        var g = SeededGenerator(seed: seed)
        let pools = [Self.integers, Self.reals, Self.exactMix, Self.wideMix, Self.anything]
        for count in [0, 1, 2, 3, 10, 100, 1_000] {
            for _ in 0..<20 {
                let poolA = pools[Int(g.next() % UInt64(pools.count))]
                let poolB = pools[Int(g.next() % UInt64(pools.count))]
                // Few distinct values, so ties (and the id tie-break) are common.
                let textIDs = g.next() % 4 == 0
                var rows: [Row] = (0..<count).map { i in
                    let id: Value = textIDs ? .text("id\(i)") : .integer(Int64(i) * 7 - 300)
                    var row = Row([("id", id), ("a", poolA[Int(g.next() % UInt64(poolA.count))]), ("b", poolB[Int(g.next() % UInt64(poolB.count))])])
                    if g.next() % 9 == 0 { row["a"] = nil }
                    return row
                }
                let inIDOrder = g.next() % 2 == 0
                if inIDOrder {
                    rows = QueryEvaluator.sorted(rows, by: [SortTerm(column: "id")])
                } else {
                    rows.shuffle(using: &g)
                }
                var terms: [SortTerm] = []
                for _ in 0..<(g.next() % 3) {
                    terms.append(SortTerm(column: ["a", "b"][Int(g.next() % 2)], ascending: g.next() % 2 == 0))
                }
                terms.append(SortTerm(column: "id", ascending: g.next() % 2 == 0))
                let expected = QueryEvaluator.sorted(rows, by: terms)
                let actual = RowSort.order(count: rows.count, by: terms, idColumn: "id", inIDOrder: inIDOrder) {
                    rows[$0].value(terms[$1].column)
                }.map { rows[$0] }
                #expect(actual.map(\.description) == expected.map(\.description), "count \(count), terms \(terms), in id order \(inIDOrder)")
            }
        }
    }

    @Test func numberKeysOrderLikeValueCompare() {
        let values = Self.exactMix
        for a in values {
            for b in values {
                let byKey = RowSort.numberKey(a) < RowSort.numberKey(b) ? -1 : (RowSort.numberKey(a) == RowSort.numberKey(b) ? 0 : 1)
                #expect(byKey == Value.compare(a, b), "\(a) vs \(b)")
            }
        }
    }
}
