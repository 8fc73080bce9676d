import Foundation
import Reservoir

extension ConformanceSuite {
    static let valueCases: [ConformanceCase] = [
        ConformanceCase("values", "every field type round-trips") { context in
            let samples = (0..<6).map(AllTypes.sample)
            try context.store.write { tx in for sample in samples { try tx.insert(sample) } }
            for sample in samples {
                try expectEqual(try context.store.get(AllTypes.self, id: sample.id), sample, "get(\(sample.id))")
            }
            let fetched = try context.store.fetch(AllTypes.self)
            try expectEqual(Set(fetched.map(\.id)), Set(samples.map(\.id)), "fetched ids")
            for record in fetched {
                try expectEqual(record, samples.first { $0.id == record.id }, "fetched record \(record.id)")
            }
        },

        ConformanceCase("values", "strings keep their exact bytes") { context in
            let long = String(repeating: "0123456789abcdef", count: 65_536)  // 1 MiB
            let strings = ["", " ", "plain", "ünïcödé", "e\u{301}", "\u{e9}", "emoji 👩‍👩‍👧‍👦 🇳🇿", "nul\u{0}inside", "\u{0}", "tab\tnew\nline", "'quote\" --", long]
            try context.store.write { tx in
                for (i, text) in strings.enumerated() { try tx.insert(Item(id: i, name: text)) }
            }
            for (i, text) in strings.enumerated() {
                let stored = try context.store.get(Item.self, id: i)?.name
                try expect(stored.map { Array($0.utf8) == Array(text.utf8) } ?? false,
                           "string #\(i) (\(text.utf8.count) bytes) came back as \(stored.map { "\($0.utf8.count) bytes" } ?? "nil")")
                try expectEqual(try context.store.ids(FetchRequest(where: \.name == text)), [i], "== on string #\(i)")
            }
        },

        ConformanceCase("values", "integer and real edges round-trip") { context in
            let ints: [Int] = [Int.min, Int.min + 1, -1, 0, 1, 1 << 53, (1 << 53) + 1, Int.max - 1, Int.max]
            let reals: [Double] = [-.infinity, -.greatestFiniteMagnitude, -1.5, -.leastNonzeroMagnitude, 0, .leastNonzeroMagnitude, 0.1, 9_007_199_254_740_994, .greatestFiniteMagnitude, .infinity]
            try context.store.write { tx in
                for (i, n) in ints.enumerated() { try tx.insert(Item(id: i, name: "int", rank: n)) }
                for (i, d) in reals.enumerated() { try tx.insert(Item(id: 100 + i, name: "real", score: d)) }
            }
            for (i, n) in ints.enumerated() {
                try expectEqual(try context.store.get(Item.self, id: i)?.rank, n, "rank of #\(i)")
            }
            for (i, d) in reals.enumerated() {
                let stored = try context.store.get(Item.self, id: 100 + i)?.score
                try expect(stored?.bitPattern == d.bitPattern, "score #\(i): expected \(d), got \(String(describing: stored))")
            }
        },

        ConformanceCase("values", "NaN is stored as null and reads back as NaN") { context in
            var sample = AllTypes.sample(1)
            sample.double = .nan
            try context.store.write { tx in try tx.insert(sample) }
            let stored = try context.store.get(AllTypes.self, id: sample.id)
            try expect(stored?.double.isNaN ?? false, "double NaN read back as \(String(describing: stored?.double))")
            try expectEqual(try context.store.count(FetchRequest<AllTypes>(where: \.double == .nan)), 1, "rows matching == NaN (null)")
        },

        ConformanceCase("values", "a NaN operand or raw value means null, everywhere") { context in
            // One meaning for NaN (Backends.md § Values): stored as null, and a NaN operand
            // is the null operand, so a query finds the records a NaN was stored in.
            try context.store.insertItems([Item(id: 1, name: "nan", score: .nan), Item(id: 2, name: "nil"), Item(id: 3, name: "one", score: 1)])
            try expectEqual(try context.store.ids(FetchRequest<Item>(where: \.score == .nan)), [1, 2], "== NaN")
            try expectEqual(try context.store.ids(FetchRequest<Item>(where: \.score == nil)), [1, 2], "== nil")
            try expectEqual(try context.store.ids(FetchRequest<Item>(where: \.score != .nan)), [3], "!= NaN")
            try expectEqual(try context.store.ids(FetchRequest<Item>(where: \.score < .nan || \.score >= .nan)), [], "ordering against NaN")
            try expectEqual(try context.store.ids(FetchRequest<Item>(where: .isIn(\.score, [.nan, 1]))), [1, 2, 3], "in [NaN, 1]")
            try expectEqual(try context.store.ids(FetchRequest<Item>(sortBy: [.descending(\.score)])), [3, 1, 2], "NaN sorts as null")
            try context.store.putRows([Row([("id", .integer(4)), ("a", .real(.nan)), ("b", .integer(1))])], in: rawEntity)
            try expect(try context.store.read { try $0.rows(Query(entity: rawEntity)) }.first?.value("a").isNull ?? false, "a raw NaN reads back as null")
            try expectEqual(try context.store.rawIDs(.compare(column: "a", .equal, .real(.nan))), [.integer(4)], "a raw NaN operand matches null")
            try expectEqual(try context.store.rawIDs(.compare(column: "a", .equal, .null)), [.integer(4)], "== null")
        },

        ConformanceCase("values", "raw rows keep each value's storage class") { context in
            let values: [Value] = [.null, .integer(0), .integer(-42), .real(1.0), .real(-2.5), .text(""), .text("1"), .blob(Data()), .blob(Data([0, 255])), .integer(Int64.max), .real(1e-300)]
            let rows = values.enumerated().map { i, value in Row(columns: ["id", "a", "b"], values: [.integer(Int64(i)), value, .text("row \(i)")]) }
            try context.store.putRows(rows, in: rawEntity)
            let query = try Query(entity: rawEntity)
            let stored = try context.store.read { try $0.rows(query) }
            try expectEqual(stored.count, rows.count, "row count")
            for (expected, actual) in zip(rows, stored) {
                try expect(actual.value("a").isIdentical(to: expected.value("a")),
                           "row \(expected.value("id")): stored \(expected.value("a")) (\(expected.value("a").kindName)), read \(actual.value("a")) (\(actual.value("a").kindName))")
                try expect(actual.value("c").isNull, "row \(expected.value("id")): a column never written reads \(actual.value("c")), expected null")
            }
        },

        ConformanceCase("values", "an unstorable value is rejected and nothing is written") { context in
            var sample = AllTypes.sample(1)
            sample.uint64 = UInt64.max
            try context.store.write { tx in try tx.insert(Item(id: 1, name: "kept")) }
            let error = try expectError(.valueOutOfRange, "inserting UInt64.max") {
                try context.store.write { tx in
                    try tx.insert(Item(id: 2, name: "rolled back"))
                    try tx.insert(sample)
                }
            }
            try expect(error.message.contains("\(UInt64.max)"), "message names the value: \(error.message)")
            try expectEqual(try context.store.ids(FetchRequest()), [1], "records after the failed write")
        },

        ConformanceCase("values", "a row that cannot decode names its column and id") { context in
            let entity = Item.schema.entity
            try context.store.write { tx in
                try tx.insert(Item(id: 1, name: "fine", rank: 1))
                try tx.putRow(Row([("id", .integer(2)), ("name", .text("bad")), ("rank", .text("not a number"))]), in: entity)
            }
            let error = try expectError(.typeMismatch, "decoding a text rank as Int") {
                try context.store.fetch(Item.self)
            }
            try expect(error.message.contains("rank") && error.message.contains("2") && error.message.contains("conformance_items"),
                       "message names entity, column and id: \(error.message)")
            try expect(error.message.contains(context.store.backend.location), "message names the store: \(error.message)")
            try expectEqual(try context.store.get(Item.self, id: 1)?.name, "fine", "the good record still reads")
        },
    ]
}
