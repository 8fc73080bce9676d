import Foundation
import PropertyBased
import Reservoir
import Testing

private struct Note: Storable {
    var id: Int
    var text: String
    var rank: Int?
    static let schema = Schema<Note>("notes", fields: [.field(\.id), .field(\.text), .field(\.rank)])
}

/// Lists no `.field(\.id)`, and stores its id under a renamed column.
private struct Ticket: Storable {
    var id: Int
    var title: String
    enum CodingKeys: String, CodingKey { case id = "ticket_id", title }
    static let schema = Schema<Ticket>("tickets", idColumn: "ticket_id", fields: [.field(\.title)])
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

    @Test("sorted gives a plain stable sort's order: integer keys, mixed keys, descending terms, rows already in order")
    func sortedMatchesAPlainSort() async {
        // Keys from a small range, so that ties reach the later terms; integers only in half
        // the cases (the integer path), otherwise mixed with reals, texts and nulls.
        let integer = Gen.int64(in: -3...3).map { Value.integer($0) }
        let mixed = Gen<Value>.oneOf(integer, Gen.int(in: -2...2).map { Value.real(Double($0) / 2) },
                                     Gen.int(in: 0...2).map { Value.text(["", "a", "ab"][$0]) }, Gen.always(Value.null))
        let keys = Gen<[Value]>.oneOf(integer.array(of: 0...12), mixed.array(of: 0...12))
        let direction = Gen.bool.array(of: 2...2)
        await propertyCheck(count: 600, input: keys, keys, direction, Gen.bool) { first, second, ascending, presorted in
            var rows = Swift.zip(first, second).enumerated().map { position, pair in
                Row([("a", pair.0), ("b", pair.1), ("n", .integer(Int64(position)))])
            }
            let widths: [[SortTerm]] = [
                [SortTerm(column: "a", ascending: ascending[0])],
                [SortTerm(column: "a", ascending: ascending[0]), SortTerm(column: "b", ascending: ascending[1])],
            ]
            for terms in widths {
                func before(_ x: Row, _ y: Row) -> Bool {
                    for term in terms {
                        let order = Value.compare(x.value(term.column), y.value(term.column))
                        if order != 0 { return term.ascending ? order < 0 : order > 0 }
                    }
                    return false
                }
                if presorted { rows = rows.enumerated().sorted { before($0.1, $1.1) || (!before($1.1, $0.1) && $0.0 < $1.0) }.map(\.1) }
                // The plain sort, stable by the rows' positions.
                let expected = rows.enumerated().sorted { before($0.1, $1.1) || (!before($1.1, $0.1) && $0.0 < $1.0) }.map(\.1)
                let sorted = QueryEvaluator.sorted(rows, by: terms)
                #expect(sorted.map { $0.value("n") } == expected.map { $0.value("n") }, "\(terms) over \(rows.map(\.description))")
            }
        }
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

    @Test("\\.id is queryable without .field(\\.id), under the id's own column")
    func idWithoutListedField() throws {
        let query = try FetchRequest<Ticket>(where: \.id > 1 && .isIn(\.id, [2, 3]), sortBy: [.descending(\.id)]).query()
        #expect(query.predicate == .and([
            .compare(column: "ticket_id", .greater, .integer(1)), .isIn(column: "ticket_id", [.integer(2), .integer(3)]),
        ]))
        #expect(query.sort == [SortTerm(column: "ticket_id", ascending: false)])

        let store = try Store.open("memory:")
        defer { store.close() }
        try store.write { tx in for id in 1...4 { try tx.insert(Ticket(id: id, title: "t\(id)")) } }
        #expect(try store.fetch(FetchRequest<Ticket>(where: \.id >= 2, sortBy: [.descending(\.id)])).map(\.id) == [4, 3, 2])
        // Another member is still refused, with the schema's columns named.
        let error = #expect(throws: ReservoirError.self) { try FetchRequest<Ticket>(sortBy: [.ascending(\.title.count)]).query() }
        #expect(error?.message.contains("ticket_id, title") == true)
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

@Suite("Entity descriptions")
struct EntityDescriptionValueTests {
    @Test("copies share their fields, and changing one copy leaves the others as they were")
    func valueSemantics() {
        let original = EntityDescription(name: "t", fields: ["id", "a"], indexes: ["a"], integerIDs: true)
        var changed = original
        #expect(changed == original)
        changed.indexes = []
        #expect(original.indexes == ["a"], "the original keeps its index")
        #expect(changed != original)
        changed.indexes = ["a"]
        #expect(changed == original, "equal fields in another box are equal")
        #expect(changed.hashValue == original.hashValue)
        for edit in [{ (e: inout EntityDescription) in e.name = "u" }, { $0.idColumn = "key" }, { $0.fields = ["id"] }, { $0.integerIDs = false }] {
            var copy = original
            edit(&copy)
            #expect(copy != original)
            #expect(Set([copy, original]).count == 2)
        }
        #expect(EntityDescription(name: "t", idColumn: "key").fields == ["key"], "the id column is the field list when none is given")
    }
}
