import Foundation
import Reservoir

extension ConformanceSuite {
    static let sortCases: [ConformanceCase] = [
        ConformanceCase("sorting", "multi-key sorts end with the id") { context in
            try context.store.insertItems(standardItems)
            let cases: [(String, FetchRequest<Item>, [Int])] = [
                ("score asc (nulls first, ties by id)", FetchRequest(sortBy: [.ascending(\.score)]), [2, 7, 4, 5, 9, 1, 3, 6, 8]),
                ("score desc (nulls last, ties by id)", FetchRequest(sortBy: [.descending(\.score)]), [8, 6, 1, 3, 5, 9, 4, 2, 7]),
                ("group asc, rank desc", FetchRequest(sortBy: [.ascending(\.group), .descending(\.rank)]), [3, 5, 8, 7, 4, 2, 1, 9, 6]),
                ("name asc (bytes)", FetchRequest(sortBy: [.ascending(\.name)]), [5, 8, 2, 4, 1, 9, 3, 7, 6]),
                ("id desc", FetchRequest(sortBy: [.descending(\.id)]), [9, 8, 7, 6, 5, 4, 3, 2, 1]),
                ("rank asc where group == fruit", FetchRequest(where: \.group == "fruit", sortBy: [.ascending(\.rank)]), [6, 1, 9, 2]),
            ]
            for (label, request, expected) in cases {
                try expectEqual(try context.store.ids(request), expected, label)
            }
        },

        ConformanceCase("sorting", "mixed storage classes sort null, numbers, text, blob") { context in
            let values: [Value] = [.blob(Data([0])), .text("b"), .integer(3), .null, .real(2.5), .text("B"), .integer(-1), .blob(Data()), .real(3.0), .text("")]
            try context.store.putRows(values.enumerated().map { Row([("id", .integer(Int64($0))), ("a", $1)]) }, in: rawEntity)
            try expectEqual(try context.store.rawIDs(nil, sort: [SortTerm(column: "a")]), [3, 6, 4, 2, 8, 9, 5, 1, 7, 0], "a ascending")
            try expectEqual(try context.store.rawIDs(nil, sort: [SortTerm(column: "a", ascending: false)]), [0, 7, 1, 5, 9, 2, 8, 4, 6, 3], "a descending")
        },

        ConformanceCase("sorting", "limit and offset window the sorted result") { context in
            let items = (1...25).map { Item(id: $0, name: "n\($0 % 7)", rank: $0 % 4) }
            try context.store.insertItems(items)
            let full = try context.store.ids(FetchRequest(sortBy: [.ascending(\.rank), .descending(\.name)]))
            try expectEqual(full.count, 25, "full result")
            for limit in [0, 1, 2, 10, 25, 100] as [Int?] + [nil] {
                for offset in [0, 1, 5, 24, 25, 1000] {
                    let window = try context.store.ids(FetchRequest(sortBy: [.ascending(\.rank), .descending(\.name)], limit: limit, offset: offset))
                    let start = min(offset, full.count)
                    let expected = Array(full[start..<min(full.count, start + (limit ?? full.count))])
                    try expectEqual(window, expected, "limit \(String(describing: limit)) offset \(offset)")
                }
            }
        },

        ConformanceCase("sorting", "a negative limit or offset is an error") { context in
            try expectError(.invalidQuery, "limit -1") { try context.store.fetch(FetchRequest<Item>(limit: -1)) }
            try expectError(.invalidQuery, "offset -1") { try context.store.fetch(FetchRequest<Item>(offset: -1)) }
        },
    ]
}
