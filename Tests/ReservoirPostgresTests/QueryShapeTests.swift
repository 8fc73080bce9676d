import Foundation
import Reservoir
@testable import ReservoirPostgres
import Testing

/// ``PGQueryShape``: the SQL kept for a shape is what the compiler makes of every query of
/// that shape, whatever its operands, and only queries whose SQL depends on no value get one.
@Suite("PostgreSQL: queries of a value-free shape")
struct QueryShapeTests {
    static let entity = EntityDescription(name: "things", idColumn: "id", fields: ["id", "n", "r", "s", "b", "m"])
    static let table = TableInfo(entity: entity, columns: ["id", "n", "r", "s", "b", "m"],
                                 kinds: ["id": .integer, "n": .integer, "r": .real, "s": .text, "b": .blob, "m": .mixed])
    static let layout = Layout(schema: "shapes")

    static func compiled(_ query: Query) -> PGQuery {
        PGCompiler.compile(query, table: table, layout: layout, counting: false)
    }

    /// Two queries of one shape, their operands chosen far apart: the same SQL, and each one's
    /// parameters are the shape's, in the compiler's order (the window's after the predicate's).
    @Test func queriesOfOneShapeShareTheirSQLAndTakeTheirOwnParameters() throws {
        func query(_ n: Int64, _ r: Double, _ s: String, _ b: [UInt8], limit: Int, offset: Int) throws -> Query {
            try Query(entity: Self.entity,
                      predicate: .and([.compare(column: "n", .greaterOrEqual, .integer(n)),
                                       .or([.compare(column: "r", .less, .real(r)), .not(.compare(column: "s", .notEqual, .text(s)))]),
                                       .compare(column: "b", .equal, .blob(Data(b)))]),
                      sort: [SortTerm(column: "s", ascending: false)], limit: limit, offset: offset)
        }
        let first = try query(-5, 2.5, "", [], limit: 3, offset: 1)
        let second = try query(.max, -1e300, "a longer text, é", [0, 0xFF], limit: 100, offset: 7)
        let shaped = try #require(PGQueryShape.of(first, table: Self.table, counting: false))
        let other = try #require(PGQueryShape.of(second, table: Self.table, counting: false))
        #expect(shaped.shape == other.shape)
        #expect(Self.compiled(first).sql == Self.compiled(second).sql)
        #expect(shaped.parameters == Self.compiled(first).parameters)
        #expect(other.parameters == Self.compiled(second).parameters)
        #expect(other.parameters == [.integer(.max), .real(-1e300), .text("a longer text, é"), .bytes([0, 0xFF]), .integer(100), .integer(7)])
        // Another operator, sort, window or counting is another shape.
        let counted = try #require(PGQueryShape.of(first, table: Self.table, counting: true))
        #expect(counted.shape != shaped.shape)
        let unwindowed = try #require(PGQueryShape.of(try Query(entity: Self.entity, predicate: first.predicate, sort: first.sort), table: Self.table, counting: false))
        #expect(unwindowed.shape != shaped.shape)
    }

    /// A comparison the compiler decides from its operand's value has no shape: a null, a
    /// NaN, text holding NUL, another kind than the column's (an integer against a real column
    /// is bounded by its value), a mixed or missing column; and prefixes, `contains`, `in`
    /// lists, constants and empty `and`/`or`.
    @Test func conditionsDecidedByValuesHaveNoShape() throws {
        let unshaped: [RowPredicate] = [
            .compare(column: "n", .equal, .null),
            .compare(column: "r", .less, .real(.nan)),
            .compare(column: "s", .equal, .text("a\u{0}b")),
            .compare(column: "r", .less, .integer(3)),
            .compare(column: "n", .less, .real(2.5)),
            .compare(column: "s", .less, .integer(1)),
            .compare(column: "m", .equal, .integer(1)),
            .compare(column: "absent", .equal, .integer(1)),
            .hasPrefix(column: "s", "a"),
            .contains(column: "s", "a"),
            .isIn(column: "n", [.integer(1)]),
            .constant(true),
            .and([]),
            .or([]),
            .and([.compare(column: "n", .equal, .integer(1)), .compare(column: "n", .equal, .null)]),
            .not(.hasPrefix(column: "s", "")),
        ]
        for predicate in unshaped {
            #expect(PGQueryShape.of(try Query(entity: Self.entity, predicate: predicate), table: Self.table, counting: false) == nil, "\(predicate)")
        }
        #expect(PGQueryShape.of(try Query(entity: Self.entity), table: Self.table, counting: false) != nil)
    }
}
