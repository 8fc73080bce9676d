import Foundation
import Reservoir
@testable import ReservoirSQLite
import Testing

/// ``SQLQueryShape``: the SQL kept for a shape is what the compiler makes of every query of
/// that shape, whatever its operands, and only queries whose SQL depends on no value get one.
@Suite("SQLite: queries of a value-free shape")
struct QueryShapeTests {
    static let entity = EntityDescription(name: "things", idColumn: "id", fields: ["id", "n", "s", "b"])
    static let table = Catalog.Table(entity: entity, columns: ["id", "n", "s", "b"], integerKey: true)

    /// Two queries of one shape, their operands far apart (an integer and a real in one
    /// column: SQLite compares numbers as numbers, so the SQL is the same): the same SQL, and
    /// each one's parameters are the shape's, in the compiler's order.
    @Test func queriesOfOneShapeShareTheirSQLAndTakeTheirOwnParameters() throws {
        func query(_ n: Value, _ s: String, _ b: [UInt8], limit: Int?, offset: Int) throws -> Query {
            try Query(entity: Self.entity,
                      predicate: .and([.compare(column: "n", .greaterOrEqual, n),
                                       .or([.compare(column: "id", .notEqual, .integer(3)), .not(.compare(column: "s", .equal, .text(s)))]),
                                       .compare(column: "b", .less, .blob(Data(b)))]),
                      sort: [SortTerm(column: "s", ascending: false)], limit: limit, offset: offset)
        }
        let first = try query(.integer(-5), "", [], limit: 3, offset: 0)
        let second = try query(.real(2.5), "a longer text, é", [0, 0xFF], limit: nil, offset: 7)
        let shaped = try #require(SQLQueryShape.of(first, table: Self.table, counting: false))
        let other = try #require(SQLQueryShape.of(second, table: Self.table, counting: false))
        #expect(shaped.shape == other.shape)
        #expect(SQLCompiler.compile(first, table: Self.table, counting: false).sql == SQLCompiler.compile(second, table: Self.table, counting: false).sql)
        #expect(shaped.parameters == SQLCompiler.compile(first, table: Self.table, counting: false).parameters)
        #expect(other.parameters == SQLCompiler.compile(second, table: Self.table, counting: false).parameters)
        #expect(other.parameters == [.value(.real(2.5)), .value(.integer(3)), .value(.text("a longer text, é")), .value(.blob(Data([0, 0xFF]))),
                                     .value(.integer(-1)), .value(.integer(7))])
        // A text operand against the rowid id is written `+id`: another shape.
        let textID = try Query(entity: Self.entity, predicate: .compare(column: "id", .equal, .text("3")))
        let integerID = try Query(entity: Self.entity, predicate: .compare(column: "id", .equal, .integer(3)))
        #expect(try #require(SQLQueryShape.of(textID, table: Self.table, counting: false)).shape
                != (try #require(SQLQueryShape.of(integerID, table: Self.table, counting: false))).shape)
        #expect(try #require(SQLQueryShape.of(first, table: Self.table, counting: true)).shape != shaped.shape)
    }

    /// A null operand, a column the table lacks, `in` lists, prefixes, `contains`, constants
    /// and empty `and`/`or` are decided by values or the catalog: no shape.
    @Test func conditionsDecidedByValuesHaveNoShape() throws {
        let unshaped: [RowPredicate] = [
            .compare(column: "n", .equal, .null),
            .compare(column: "n", .less, .null),
            .compare(column: "absent", .equal, .integer(1)),
            .hasPrefix(column: "s", "a"),
            .contains(column: "s", "a"),
            .isIn(column: "n", [.integer(1)]),
            .constant(false),
            .and([]),
            .or([]),
            .or([.compare(column: "n", .equal, .integer(1)), .compare(column: "absent", .equal, .integer(1))]),
            .not(.contains(column: "s", "")),
        ]
        for predicate in unshaped {
            #expect(SQLQueryShape.of(try Query(entity: Self.entity, predicate: predicate), table: Self.table, counting: false) == nil, "\(predicate)")
        }
    }
}
