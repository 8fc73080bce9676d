import Foundation
import Reservoir

/// What must survive closing and reopening, compared exactly: damage done on save (a real
/// rounded, text normalised, a log kept only in memory) shows only after a reopening.
extension ConformanceSuite {
    static let reopeningCases: [ConformanceCase] = [
        ConformanceCase("reopening", "every value reads back bit for bit after reopening", requires: .persistent) { context in
            let rows = exactValues.enumerated().map { i, value in
                Row(columns: ["id", "a", "b"], values: [.integer(Int64(i)), value, .text("row \(i)")])
            }
            try context.store.putRows(rows, in: exactEntity)
            let dates = exactDates.enumerated().map { i, date in
                var sample = AllTypes.sample(i)
                sample.date = date
                sample.double = exactDoubles[i % exactDoubles.count]
                return sample
            }
            try context.store.write { tx in for sample in dates { try tx.insert(sample) } }
            try checkExactValues(context.store, rows: rows, dates: dates, when: "before reopening")
            context.store.close()
            let reopened = try context.openAnother()
            try checkExactValues(reopened, rows: rows, dates: dates, when: "after reopening")
        },

        ConformanceCase("reopening", "the change log and sequence survive reopening", requires: .persistent) { context in
            let recorder = ChangeRecorder(context.store)
            try context.store.write { tx in try tx.insert(Item(id: 1, name: "one")) }
            try context.store.write { tx in
                try tx.insert(Item(id: 2, name: "two"))
                try tx.insert(Item(id: 3, name: "three"))
            }
            try context.store.write { tx in
                try tx.update(Item(id: 1, name: "one again"))
                _ = try tx.delete(Item.self, id: 2)
            }
            let published = recorder.changeSets
            recorder.cancel()
            try expectEqual(published.count, 3, "change sets published")
            let sequences = published.map(\.sequence)
            let expected = published.flatMap(\.logEntries)
            let before = try context.store.backend.read { try $0.changeLog(after: 0, limit: .max) }
            // A persistent store's log holds every change set record(_:) was given (the suite's
            // harnesses keep far more than three), as the change set's own logEntries.
            try expectEqual(Set(before), Set(expected), "changeLog(after: 0) before reopening, against the change sets' logEntries")
            try expectEqual(before.count, expected.count, "entries in the log before reopening")
            let firstOnly = try context.store.backend.read { try $0.changeLog(after: 0, limit: 1) }
            let last = try context.store.backend.read { try $0.lastSequence() }
            try expectEqual(last, sequences.last, "lastSequence() before reopening")
            context.store.close()

            let reopened = try context.openAnother()
            try expectEqual(try reopened.backend.read { try $0.lastSequence() }, last, "lastSequence() after reopening")
            try expectEqual(try reopened.backend.read { try $0.changeLog(after: 0, limit: .max) }, before, "changeLog(after: 0) after reopening")
            try expectEqual(try reopened.backend.read { try $0.changeLog(after: 0, limit: 1) }, firstOnly, "changeLog(after: 0, limit: 1) after reopening")
            try expectEqual(try reopened.backend.read { try $0.changeLog(after: sequences[0], limit: .max) }, before.filter { $0.sequence > sequences[0] },
                            "changeLog(after: \(sequences[0])) after reopening")

            let after = ChangeRecorder(reopened)
            try reopened.write { tx in try tx.insert(Item(id: 4, name: "after reopening")) }
            guard let next = after.changeSets.first else { throw ConformanceFailure(message: "the commit after reopening published no change set", file: #fileID, line: #line) }
            after.cancel()
            try expect(next.sequence > last, "the commit after reopening is numbered \(next.sequence), after \(last): numbering continues")
            try expectEqual(try reopened.backend.read { try $0.lastSequence() }, next.sequence, "lastSequence() after the next commit")
            try expectEqual(Set(try reopened.backend.read { try $0.changeLog(after: last, limit: .max) }), Set(next.logEntries),
                            "changeLog(after: \(last)): the next commit's entries")
            try expectEqual(try reopened.backend.read { try $0.changeLog(after: 0, limit: 3) }, before, "changeLog(after: 0, limit: 3): the three commits before reopening")
        },

        ConformanceCase("reopening", "entities() after reopening lists each entity as last written", requires: .persistent) { context in
            let backend = context.store.backend
            try backend.write { tx in
                try tx.put(describedV1, id: .text("a"), row: Row([("id", .text("a")), ("title", .text("first"))]))
                try tx.put(otherEntity, id: .integer(1), row: Row([("id", .integer(1)), ("x", .integer(1))]))
            }
            try backend.write { tx in
                try tx.put(describedV2, id: .text("b"), row: Row([("id", .text("b")), ("title", .text("second")), ("rating", .integer(5))]))
                try tx.delete(otherEntity, id: .integer(1))
            }
            context.store.close()
            let reopened = try context.openAnother()
            let listed = try reopened.backend.read { try $0.entities() }
            try expectEqual(listed.filter { $0.name == describedV2.name }.map(DescribedEntity.init), [DescribedEntity(describedV2)],
                            "\(describedV2.name) after reopening, as last written")
            try expect(!listed.contains { $0.name == otherEntity.name }, "an entity whose rows were all deleted is not listed: \(listed.map(DescribedEntity.init))")
        },

        ConformanceCase("reopening", "a store whose files are replaced stops with .gone", requires: .persistent) { context in
            let location = context.store.backend.location
            var isDirectory: ObjCBool = false
            guard location.hasPrefix("/") || location.hasPrefix("."), FileManager.default.fileExists(atPath: location, isDirectory: &isDirectory) else {
                throw ConformanceSkip(reason: "needs a location that is a path in the file system; \(context.configuration)'s location \"\(location)\" is not one")
            }
            // Several commits first: a backend that renames a new file in on each commit must
            // take its own file's new identity, or its second commit would be refused.
            for i in 1...3 {
                try context.store.write { tx in try tx.insert(Item(id: i, name: "n\(i)")) }
            }
            try expectEqual(try context.store.ids(FetchRequest()), [1, 2, 3], "records before the files are replaced")
            let aside = location + ".replaced-by-conformance"
            defer { try? FileManager.default.removeItem(atPath: aside) }
            try FileManager.default.moveItem(atPath: location, toPath: aside)
            try FileManager.default.copyItem(atPath: aside, toPath: location)
            try expectError(.gone, "a write after the store's files were replaced") {
                try context.store.write { tx in try tx.insert(Item(id: 4, name: "lost")) }
            }
            try expectError(.gone, "commitToken() after the store's files were replaced") { try context.store.backend.commitToken() }
        },
    ]

    /// Values whose bits a save must keep: signed zero, integer and double extremes, 2^53 ± 1,
    /// composed and decomposed text, NUL, empty and large text and blobs. NaN is null.
    static let exactValues: [Value] = [
        .null, .integer(.min), .integer(.min + 1), .integer(-1), .integer(0), .integer(.max - 1), .integer(.max),
        .integer((1 << 53) - 1), .integer(1 << 53), .integer((1 << 53) + 1), .integer(-(1 << 53) - 1),
        .real(-0.0), .real(0.0), .real(-.leastNonzeroMagnitude), .real(.leastNonzeroMagnitude), .real(0.1), .real(-1.5),
        .real(9_007_199_254_740_992), .real(9_007_199_254_740_994), .real(-.greatestFiniteMagnitude), .real(.greatestFiniteMagnitude),
        .real(.infinity), .real(-.infinity), .real(1e-300), .real(.nan),
        .text(""), .text("e\u{301}"), .text("\u{e9}"), .text("\u{212B}"), .text("A\u{30A}"), .text("\u{1E9B}\u{323}"), .text("\u{FB01}"),
        .text("nul\u{0}inside"), .text("\u{0}"), .text(" spaced "), .text("tab\tnew\nline\r"), .text("emoji 👩‍👩‍👧‍👦 🇳🇿"),
        .text(String(repeating: "e\u{301}0123456789abcdef", count: 32_768)),
        .blob(Data()), .blob(Data([0])), .blob(Data([0xFF, 0, 0xFE])), .blob(Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })),
    ]

    /// Doubles stored through a record's `Double` field.
    static let exactDoubles: [Double] = [-0.0, -9_007_199_254_740_994, -.leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1]

    /// Dates stored through a record's `Date` field.
    static let exactDates: [Date] = [
        Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.0), Date(timeIntervalSince1970: 0),
        Date(timeIntervalSinceReferenceDate: 800_000_000.123456), Date(timeIntervalSinceReferenceDate: -1e9 - 0.5),
        .distantPast, .distantFuture,
    ]

    /// Raw rows and typed records, exactly: reals by bit pattern, text by UTF-8 bytes.
    static func checkExactValues(_ store: Store, rows: [Row], dates: [AllTypes], when: String) throws {
        let stored = try store.backend.read { tx in try rows.map { try tx.row(exactEntity.name, id: $0.value("id")) } }
        let fetched = try store.read { try $0.rows(Query(entity: exactEntity)) }
        try expectEqual(fetched.count, rows.count, "raw rows fetched \(when)")
        for (index, expected) in rows.enumerated() {
            // NaN is stored as null (Backends.md, Values).
            let want = expected.value("a").isNaNReal ? .null : expected.value("a")
            let got = stored[index]?.value("a") ?? .text("<no row>")
            try expect(got.isIdentical(to: want), "\(when): row(\(index)) holds \(show(got)), stored \(show(want))")
            let inFetch = fetched.first { $0.value("id").isIdentical(to: expected.value("id")) }?.value("a") ?? .text("<no row>")
            try expect(inFetch.isIdentical(to: want), "\(when): fetch gave row \(index) \(show(inFetch)), stored \(show(want))")
        }
        for sample in dates {
            guard let record = try store.get(AllTypes.self, id: sample.id) else {
                throw ConformanceFailure(message: "\(when): the record with date \(sample.date) is missing", file: #fileID, line: #line)
            }
            try expect(record.date.timeIntervalSinceReferenceDate.bitPattern == sample.date.timeIntervalSinceReferenceDate.bitPattern,
                       "\(when): date \(sample.date.timeIntervalSinceReferenceDate) read back as \(record.date.timeIntervalSinceReferenceDate)")
            try expect(record.double.bitPattern == sample.double.bitPattern, "\(when): double \(sample.double) read back as \(record.double)")
            try expectEqual(record, sample, "\(when): record \(sample.id)")
        }
        let beyond = try store.backend.read { try $0.row(exactEntity.name, id: .integer(Int64(rows.count))) }
        try expect(beyond == nil, "\(when): no row beyond the ones written")
    }

    /// A value named with its kind and, for reals, its bits; long values by size.
    static func show(_ value: Value) -> String {
        switch value {
        case let .real(number): "real \(number) (bits \(String(number.bitPattern, radix: 16)))"
        case let .text(text) where text.utf8.count > 64: "text of \(text.utf8.count) bytes"
        case let .text(text): "text \(text.debugDescription) (UTF-8 \(text.utf8.map { String($0, radix: 16) }.joined(separator: " ")))"
        case let .blob(bytes) where bytes.count > 16: "blob of \(bytes.count) bytes"
        default: "\(value.kindName) \(value)"
        }
    }
}

extension Value {
    fileprivate var isNaNReal: Bool {
        if case let .real(number) = self { return number.isNaN }
        return false
    }
}

/// Raw rows of every value, unindexed: what is checked is the stored value, and PostgreSQL's
/// btree indexes refuse values over about 2.7 KB.
let exactEntity = EntityDescription(name: "conformance_exact", idColumn: "id", fields: ["id", "a", "b"], indexes: [])

/// One entity written with two descriptions, and another emptied, for `entities()`.
let describedV1 = EntityDescription(name: "conformance_described", idColumn: "id", fields: ["id", "title"], indexes: [])
let describedV2 = EntityDescription(name: "conformance_described", idColumn: "id", fields: ["id", "title", "rating"], indexes: ["rating"])
let otherEntity = EntityDescription(name: "conformance_emptied", idColumn: "id", fields: ["id", "x"], indexes: ["x"], integerIDs: true)

/// An `EntityDescription` shown and compared by every part, not only its name.
struct DescribedEntity: Equatable, CustomStringConvertible {
    let name: String, idColumn: String, fields: [String], indexes: [String], integerIDs: Bool
    init(_ entity: EntityDescription) {
        (name, idColumn, fields, indexes, integerIDs) = (entity.name, entity.idColumn, entity.fields, entity.indexes.sorted(), entity.integerIDs)
    }
    var description: String { "\(name)(id: \(idColumn), fields: \(fields), indexes: \(indexes), integerIDs: \(integerIDs))" }
}
