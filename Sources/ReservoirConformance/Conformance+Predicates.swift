import Foundation
import Reservoir

extension ConformanceSuite {
    static let predicateCases: [ConformanceCase] = [
        ConformanceCase("predicates", "equality is null-safe") { context in
            try context.store.insertItems(standardItems)
            let cases: [(String, FetchRequest<Item>, [Int])] = [
                ("score == 2.5", FetchRequest(where: \.score == 2.5), [1, 3]),
                ("score == nil", FetchRequest(where: \.score == nil), [2, 7]),
                ("score != nil", FetchRequest(where: \.score != nil), [1, 3, 4, 5, 6, 8, 9]),
                ("score != 2.5 (keeps nulls)", FetchRequest(where: \.score != 2.5), [2, 4, 5, 6, 7, 8, 9]),
                ("score == 0 (matches -0.0)", FetchRequest(where: \.score == 0), [5, 9]),
                ("rank == 1", FetchRequest(where: \.rank == 1), [1, 9]),
                ("group == \"\"", FetchRequest(where: \.group == ""), [5]),
                ("group == nil", FetchRequest(where: \.group == nil), [3]),
                ("id == 4", FetchRequest(where: \.id == 4), [4]),
            ]
            for (label, request, expected) in cases {
                try expectEqual(try context.store.ids(request), expected, label)
            }
        },

        ConformanceCase("predicates", "ordering comparisons never match null") { context in
            try context.store.insertItems(standardItems)
            let cases: [(String, FetchRequest<Item>, [Int])] = [
                ("score < 2.5", FetchRequest(where: \.score < 2.5), [4, 5, 9]),
                ("score <= 2.5", FetchRequest(where: \.score <= 2.5), [1, 3, 4, 5, 9]),
                ("score > 2.5", FetchRequest(where: \.score > 2.5), [6, 8]),
                ("score >= 2.5", FetchRequest(where: \.score >= 2.5), [1, 3, 6, 8]),
                ("!(score < 2.5) (matches nulls)", FetchRequest(where: !(\.score < 2.5)), [1, 2, 3, 6, 7, 8]),
                ("rank > -100", FetchRequest(where: \.rank > -100), [1, 2, 4, 5, 7, 8, 9]),
                ("score < nil (never)", FetchRequest(where: \.score < nil), []),
                ("score >= nil (never)", FetchRequest(where: \.score >= nil), []),
            ]
            for (label, request, expected) in cases {
                try expectEqual(try context.store.ids(request), expected, label)
            }
        },

        ConformanceCase("predicates", "in-list, including nil") { context in
            try context.store.insertItems(standardItems)
            try expectEqual(try context.store.ids(FetchRequest(where: .isIn(\.rank, [1, 3, nil]))), [1, 3, 4, 6, 9], "rank in (1, 3, nil)")
            try expectEqual(try context.store.ids(FetchRequest(where: .isIn(\.group, ["dessert", "Fruit"]))), [4, 7, 8], "group in (dessert, Fruit)")
            try expectEqual(try context.store.ids(FetchRequest(where: .isIn(\.rank, []))), [], "rank in ()")
            try expectEqual(try context.store.ids(FetchRequest(where: !.isIn(\.rank, [1, nil]))), [2, 4, 5, 7, 8], "not rank in (1, nil)")
        },

        ConformanceCase("predicates", "text matching is byte-wise and case-sensitive") { context in
            try context.store.insertItems(standardItems)
            let cases: [(String, FetchRequest<Item>, [Int])] = [
                ("name == apple", FetchRequest(where: \.name == "apple"), [1]),
                ("name == été (composed only)", FetchRequest(where: \.name == "\u{e9}t\u{e9}"), [6]),
                ("name hasPrefix apple", FetchRequest(where: .hasPrefix(\.name, "apple")), [1, 9]),
                ("name hasPrefix Apple", FetchRequest(where: .hasPrefix(\.name, "Apple")), [2]),
                ("name hasPrefix \"\" (every text)", FetchRequest(where: .hasPrefix(\.name, "")), [1, 2, 3, 4, 5, 6, 7, 8, 9]),
                ("name contains an", FetchRequest(where: .contains(\.name, "an")), [3, 4]),
                ("name contains % and _ literally", FetchRequest(where: .contains(\.name, "%_")), [8]),
                ("name contains _ alone", FetchRequest(where: .contains(\.name, "_")), [8]),
                ("name hasPrefix e (decomposed é starts with e)", FetchRequest(where: .hasPrefix(\.name, "e")), [7]),
                ("name contains \u{301}", FetchRequest(where: .contains(\.name, "\u{301}")), [7]),
                ("name > Banana split (bytes: lower case after upper)", FetchRequest(where: \.name > "Banana split"), [1, 3, 6, 7, 9]),
                ("group hasPrefix f (null never matches)", FetchRequest(where: .hasPrefix(\.group, "f")), [1, 2, 6, 9]),
                ("rank hasPrefix 1 (numbers are not text)", FetchRequest(where: .hasPrefix(\.rank, "1")), []),
                ("score contains 5 (numbers are not text)", FetchRequest(where: .contains(\.score, "5")), []),
            ]
            for (label, request, expected) in cases {
                try expectEqual(try context.store.ids(request), expected, label)
            }
        },

        ConformanceCase("predicates", "integers and reals compare numerically") { context in
            let values: [Value] = [.integer(1), .real(1.0), .real(1.5), .integer(2), .integer(9_007_199_254_740_993), .real(9_007_199_254_740_992), .text("1"), .null, .blob(Data([1]))]
            try context.store.putRows(values.enumerated().map { Row([("id", .integer(Int64($0))), ("a", $1)]) }, in: rawEntity)
            let cases: [(String, RowPredicate, [Value])] = [
                ("a == 1", .compare(column: "a", .equal, .integer(1)), [0, 1]),
                ("a == 1.0", .compare(column: "a", .equal, .real(1.0)), [0, 1]),
                ("a < 2", .compare(column: "a", .less, .integer(2)), [0, 1, 2]),
                ("a > 2^53 as real (integer 2^53+1 is larger)", .compare(column: "a", .greater, .real(9_007_199_254_740_992)), [4, 6, 8]),
                ("a == 2^53+1", .compare(column: "a", .equal, .integer(9_007_199_254_740_993)), [4]),
                ("a > 1 (text and blob sort above numbers)", .compare(column: "a", .greater, .integer(1)), [2, 3, 4, 5, 6, 8]),
                ("a < '1' (numbers below text)", .compare(column: "a", .less, .text("1")), [0, 1, 2, 3, 4, 5]),
                ("a == '1' (text is not a number)", .compare(column: "a", .equal, .text("1")), [6]),
                ("a in (1, '1')", .isIn(column: "a", [.integer(1), .text("1")]), [0, 1, 6]),
                ("a != 1", .compare(column: "a", .notEqual, .integer(1)), [2, 3, 4, 5, 6, 7, 8]),
            ]
            for (label, predicate, expected) in cases {
                try expectEqual(try context.store.rawIDs(predicate), expected, label)
            }
        },

        ConformanceCase("predicates", "an integer id compared with text follows the order") { context in
            // Integer-id entities may get an integer key (SQLite: INTEGER PRIMARY KEY, whose
            // affinity would read '3' as 3); text still never equals a number.
            try context.store.insertItems(standardItems)
            let all: [Value] = (1...9).map { .integer(Int64($0)) }
            let cases: [(String, RowPredicate, [Value])] = [
                ("id == '3'", .compare(column: "id", .equal, .text("3")), []),
                ("id != '3'", .compare(column: "id", .notEqual, .text("3")), all),
                ("id < '3' (numbers below text)", .compare(column: "id", .less, .text("3")), all),
                ("id >= '' ", .compare(column: "id", .greaterOrEqual, .text("")), []),
                ("id in ('3', 4)", .isIn(column: "id", [.text("3"), .integer(4)]), [.integer(4)]),
                ("id == 3.0", .compare(column: "id", .equal, .real(3.0)), [.integer(3)]),
            ]
            for (label, predicate, expected) in cases {
                let query = try Query(entity: Item.schema.entity, predicate: predicate)
                try expectEqual(try context.store.read { try $0.rows(query) }.map { $0.value("id") }, expected, label)
            }
        },

        ConformanceCase("predicates", "and, or, not are two-valued") { context in
            try context.store.insertItems(standardItems)
            let cases: [(String, FetchRequest<Item>, [Int])] = [
                ("group == fruit && score >= 2.5", FetchRequest(where: \.group == "fruit" && \.score >= 2.5), [1, 6]),
                ("rank == nil || score == nil", FetchRequest(where: \.rank == nil || \.score == nil), [2, 3, 6, 7]),
                ("!(rank > 1 || score > 1)", FetchRequest(where: !(\.rank > 1 || \.score > 1)), [5, 9]),
                ("!(group == fruit) && !(rank < 3)", FetchRequest(where: !(\.group == "fruit") && !(\.rank < 3)), [3, 4, 7]),
                ("always", FetchRequest(where: .always), [1, 2, 3, 4, 5, 6, 7, 8, 9]),
                ("never", FetchRequest(where: .never), []),
                ("!never && rank == 1", FetchRequest(where: !.never && \.rank == 1), [1, 9]),
            ]
            for (label, request, expected) in cases {
                try expectEqual(try context.store.ids(request), expected, label)
            }
        },

        ConformanceCase("predicates", "random queries agree with the reference evaluator") { context in
            // A fixed seed: a failure names the query, and reruns reproduce it.
            var random = SeededGenerator(seed: 0x5EED_0001)
            let pool: [Value] = [.null, .integer(-2), .integer(0), .integer(1), .integer(3), .real(-0.5), .real(1.0), .real(2.5),
                                 .text(""), .text("a"), .text("B"), .text("ab"), .text("b"), .text("\u{e9}"), .text("e\u{301}"),
                                 .blob(Data()), .blob(Data([0])), .blob(Data([1, 2]))]
            let rows = (0..<120).map { i in
                Row([("id", .integer(Int64(i))), ("a", pool.randomElement(using: &random) ?? .null),
                     ("b", pool.randomElement(using: &random) ?? .null), ("c", pool.randomElement(using: &random) ?? .null)])
            }
            try context.store.putRows(rows, in: rawEntity)
            let all = try context.store.read { try $0.rows(Query(entity: rawEntity)) }
            try expectEqual(all.count, rows.count, "rows stored")
            for round in 0..<300 {
                let predicate = randomPredicate(depth: 3, pool: pool, using: &random)
                let sort = (0..<Int.random(in: 0...2, using: &random)).map { _ in
                    SortTerm(column: ["a", "b", "c"].randomElement(using: &random) ?? "a", ascending: Bool.random(using: &random))
                }
                let limit = Bool.random(using: &random) ? Int.random(in: 0...30, using: &random) : nil
                let offset = Bool.random(using: &random) ? Int.random(in: 0...40, using: &random) : 0
                let query = try Query(entity: rawEntity, predicate: predicate, sort: sort, limit: limit, offset: offset)
                let expected = QueryEvaluator.evaluate(query, over: all)
                let actual = try context.store.read { try $0.rows(query) }
                try expectEqual(actual.map { $0.value("id") }, expected.map { $0.value("id") }, "round \(round): \(query)")
                try expectEqual(actual, expected, "round \(round) rows: \(query)")
                try expectEqual(try context.store.read { try $0.count(query) }, expected.count, "round \(round) count: \(query)")
            }
        },

        ConformanceCase("predicates", "visiting rows one at a time gives exactly the fetched rows") { context in
            // Rows with different column sets side by side, so a backend refilling one row
            // in place must notice the layout change; every row kept must stay as it was.
            let rows = (0..<60).map { i -> Row in
                var row = Row([("id", .integer(Int64(i))), ("a", i % 3 == 0 ? .text("t\(i % 7) \(String(repeating: "x", count: i))") : .integer(Int64(i % 5)))])
                if i % 4 != 0 { row["b"] = .real(Double(i) / 4) }
                if i % 5 == 0 { row["c"] = .blob(Data([UInt8(i), 0, 1])) }
                return row
            }
            try context.store.putRows(rows, in: rawEntity)
            let queries = [
                try Query(entity: rawEntity),
                try Query(entity: rawEntity, sort: [SortTerm(column: "a"), SortTerm(column: "b", ascending: false)]),
                try Query(entity: rawEntity, predicate: .compare(column: "a", .greaterOrEqual, .integer(2)), sort: [SortTerm(column: "b")]),
                try Query(entity: rawEntity, predicate: .compare(column: "b", .less, .real(9)), sort: [SortTerm(column: "c")], limit: 7, offset: 3),
                try Query(entity: rawEntity, sort: [SortTerm(column: "a", ascending: false)], limit: 10),
            ]
            for query in queries {
                let fetched = try context.store.backend.read { try $0.fetch(query) }
                var visited: [Row] = []
                try context.store.backend.read { reader in try reader.fetch(query) { visited.append($0) } }
                try expectEqual(visited, fetched, "rows visited for \(query)")
                // A backend need not announce the count, but one that does must be exact and early.
                var announced: [Int] = []
                var visitedBeforeAnnouncing: Int?
                visited = []
                try context.store.backend.read { reader in
                    try reader.fetch(query, expecting: { count in
                        announced.append(count)
                        visitedBeforeAnnouncing = visited.count
                    }, each: { visited.append($0) })
                }
                try expectEqual(visited, fetched, "rows visited with a count for \(query)")
                try expect(announced.count <= 1, "count announced at most once for \(query): \(announced)")
                if let count = announced.first {
                    try expectEqual(count, fetched.count, "announced count for \(query)")
                    try expectEqual(visitedBeforeAnnouncing, 0, "rows visited before the count was announced for \(query)")
                }
                try expectEqual(fetched.count, try context.store.backend.read { try $0.count(query) }, "count for \(query)")
            }
            struct Stop: Error {}
            var calls = 0
            do {
                try context.store.backend.read { reader in
                    try reader.fetch(queries[0]) { _ in
                        calls += 1
                        if calls == 3 { throw Stop() }
                    }
                }
                throw ConformanceFailure(message: "a throwing body did not stop the fetch", file: #fileID, line: #line)
            } catch is Stop {
                try expectEqual(calls, 3, "rows visited before the body threw")
            }
        },
    ] + foundationPredicateCases  // the same requests written with #Predicate (Conformance+FoundationPredicates.swift)

    static func randomPredicate(depth: Int, pool: [Value], using random: inout SeededGenerator) -> RowPredicate {
        let column = ["a", "b", "c", "id"].randomElement(using: &random) ?? "a"
        let value = pool.randomElement(using: &random) ?? .null
        let texts = ["", "a", "b", "B", "e", "\u{301}", "ab"]
        switch Int.random(in: 0..<(depth > 0 ? 9 : 5), using: &random) {
        case 0, 1:
            return .compare(column: column, ComparisonOperator.allCases.randomElement(using: &random) ?? .equal, value)
        case 2:
            return .isIn(column: column, (0..<Int.random(in: 0...3, using: &random)).map { _ in pool.randomElement(using: &random) ?? .null })
        case 3:
            return .hasPrefix(column: column, texts.randomElement(using: &random) ?? "")
        case 4:
            return .contains(column: column, texts.randomElement(using: &random) ?? "")
        case 5, 6:
            return .and((0..<Int.random(in: 1...3, using: &random)).map { _ in randomPredicate(depth: depth - 1, pool: pool, using: &random) })
        case 7:
            return .or((0..<Int.random(in: 1...3, using: &random)).map { _ in randomPredicate(depth: depth - 1, pool: pool, using: &random) })
        default:
            return .not(randomPredicate(depth: depth - 1, pool: pool, using: &random))
        }
    }
}

