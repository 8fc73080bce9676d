import Foundation
import Reservoir
import Testing

private struct Note: Storable {
    var id: Int
    var text: String
    var rank: Int?
    static let schema = Schema<Note>("notes", fields: [.field(\.id), .field(\.text), .field(\.rank)])
}

@Suite("Queries")
struct QueryTests {
    let entity = EntityDescription(name: "t", idColumn: "id", fields: ["id", "a"])

    @Test("the sort always ends with the id, and nothing follows an id term")
    func tieBreak() throws {
        #expect(try Query(entity: entity).sort == [SortTerm(column: "id")])
        #expect(try Query(entity: entity, sort: [SortTerm(column: "a", ascending: false)]).sort == [SortTerm(column: "a", ascending: false), SortTerm(column: "id")])
        #expect(try Query(entity: entity, sort: [SortTerm(column: "id", ascending: false), SortTerm(column: "a")]).sort == [SortTerm(column: "id", ascending: false)])
    }

    @Test("negative windows are rejected with the value named")
    func negativeWindow() {
        let error = #expect(throws: ReservoirError.self) { try Query(entity: entity, limit: -3) }
        #expect(error?.message.contains("-3") == true)
    }

    @Test("windows clamp at the ends, including huge limits")
    func windows() throws {
        let rows = (0..<5).map { Row([("id", .integer(Int64($0)))]) }
        for (limit, offset, expected) in [(nil, 0, 5), (Int.max, 0, 5), (Int.max, 3, 2), (2, 4, 1), (0, 0, 0), (3, 10, 0)] as [(Int?, Int, Int)] {
            let query = try Query(entity: entity, limit: limit, offset: offset)
            #expect(QueryEvaluator.evaluate(query, over: rows).count == expected, "limit \(String(describing: limit)) offset \(offset)")
        }
    }

    @Test("typed predicates resolve to the documented tree")
    func typedPredicates() throws {
        let request = FetchRequest<Note>(where: \.text == "x" && !(\.rank < 3) || .isIn(\.rank, [1, nil]), sortBy: [.descending(\.rank)], limit: 2)
        let query = try request.query()
        #expect(query.predicate == .or([
            .and([.compare(column: "text", .equal, .text("x")), .not(.compare(column: "rank", .less, .integer(3)))]),
            .isIn(column: "rank", [.integer(1), .null]),
        ]))
        #expect(query.sort == [SortTerm(column: "rank", ascending: false), SortTerm(column: "id")])
        #expect(query.limit == 2)
    }

    @Test("hasPrefix and contains are byte-wise and text-only")
    func textMatching() {
        let row = Row([("a", .text("Straße")), ("n", .integer(12))])
        #expect(QueryEvaluator.matches(.hasPrefix(column: "a", "Stra"), row))
        #expect(!QueryEvaluator.matches(.hasPrefix(column: "a", "stra"), row))
        #expect(QueryEvaluator.matches(.contains(column: "a", "ß"), row))
        #expect(!QueryEvaluator.matches(.contains(column: "a", "ss"), row))
        #expect(!QueryEvaluator.matches(.hasPrefix(column: "n", "1"), row))
        #expect(!QueryEvaluator.matches(.contains(column: "missing", ""), row), "a missing column is null, and null is not text")
        #expect(QueryEvaluator.matches(.contains(column: "a", ""), row))
    }
}
