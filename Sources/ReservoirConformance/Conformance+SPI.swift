import Foundation
import Reservoir

/// The SPI called directly, as `Store` calls it, for what `Store` would otherwise hide:
/// `Store` refuses escaped transactions and calls after `close()` itself, so only these
/// cases show whether the backend does too (Backends.md, "The SPI").
extension ConformanceSuite {
    static let spiCases: [ConformanceCase] = [
        ConformanceCase("spi", "record(_:) makes lastSequence() the change set's sequence") { context in
            let backend = context.store.backend
            let before = try backend.read { try $0.lastSequence() }
            let sequence = before + 1
            let changeSet = ChangeSet(sequence: sequence, entities: [
                EntityChanges(entity: otherEntity.name, inserted: [RowChange(id: .integer(7), row: Row([("id", .integer(7)), ("x", .integer(1))]))]),
            ])
            let inside = try backend.write { tx -> UInt64 in
                try tx.put(otherEntity, id: .integer(7), row: Row([("id", .integer(7)), ("x", .integer(1))]))
                try tx.record(changeSet)
                return try tx.lastSequence()
            }
            try expectEqual(inside, sequence, "lastSequence() inside the write, after record(_:)")
            try expectEqual(try backend.read { try $0.lastSequence() }, sequence, "lastSequence() after the commit")
            let recorder = ChangeRecorder(context.store)
            try context.store.write { tx in try tx.insert(Item(id: 1, name: "through the store")) }
            guard let next = recorder.changeSets.last(where: { !$0.isExternal }) else { throw ConformanceFailure(message: "the store's commit published no change set", file: #fileID, line: #line) }
            recorder.cancel()
            try expect(next.sequence > sequence, "the store numbers its next commit \(next.sequence), after the recorded \(sequence)")
            try expectEqual(try backend.read { try $0.lastSequence() }, next.sequence, "lastSequence() after the store's commit")
        },

        ConformanceCase("spi", "record(_:) keeps the change set's commit identity: lastCommit(), commit(at:) and the log return it") { context in
            let backend = context.store.backend
            var recorded: [CommitPosition] = []
            for id in 1...2 {
                let sequence = try backend.read { try $0.lastSequence() } + 1
                let changeSet = ChangeSet(sequence: sequence, entities: [
                    EntityChanges(entity: otherEntity.name, inserted: [RowChange(id: .integer(Int64(id)), row: Row([("id", .integer(Int64(id))), ("x", .integer(1))]))]),
                ], commit: CommitPosition.newIdentity())
                let inside = try backend.write { tx -> CommitPosition in
                    try tx.put(otherEntity, id: .integer(Int64(id)), row: Row([("id", .integer(Int64(id))), ("x", .integer(1))]))
                    try tx.record(changeSet)
                    return try tx.lastCommit()
                }
                try expectEqual(inside, changeSet.position, "lastCommit() inside the write, after record(_:)")
                try expectEqual(try backend.read { try $0.lastCommit() }, changeSet.position, "lastCommit() after the commit")
                try expectEqual(try backend.read { try $0.commit(at: sequence) }, Optional(changeSet.position), "commit(at: \(sequence)) after the commit")
                recorded.append(changeSet.position)
            }
            if context.store.capabilities.contains(.multiProcess) {
                // Other stores learn of commits from the log: it must carry the identities.
                let first = recorded[0]
                try expectEqual(try backend.read { try $0.commit(at: first.sequence) }, Optional(first), "commit(at:) of the older change set")
                let entries = try backend.read { try $0.changeLog(after: first.sequence - 1, limit: 2) }
                try expectEqual(entries.map { CommitPosition(sequence: $0.sequence, commit: $0.commit) }, recorded,
                                "the change-log entries' positions")
            }
            try expectEqual(try backend.read { try $0.commit(at: recorded[1].sequence + 1) }, CommitPosition?.none, "commit(at:) of a sequence not committed")
            // The store gives every commit an identity of its own.
            let recorder = ChangeRecorder(context.store)
            try context.store.write { tx in try tx.insert(Item(id: 1, name: "one")) }
            try context.store.write { tx in try tx.insert(Item(id: 2, name: "two")) }
            recorder.cancel()
            let own = recorder.changeSets.filter { !$0.isExternal }.map(\.commit)
            try expect(own.count == 2 && !own.contains(0) && own[0] != own[1], "the store's change sets have distinct identities: \(own)")
            try expectEqual(try backend.read { try $0.lastCommit().commit }, own.last, "lastCommit() names the store's last commit")
        },

        ConformanceCase("spi", "entities() lists the entities holding rows, each as last written") { context in
            let backend = context.store.backend
            try expectEqual(try backend.read { try $0.entities() }.map(DescribedEntity.init), [], "entities() of a new store")
            try backend.write { tx in
                try tx.put(describedV1, id: .text("a"), row: Row([("id", .text("a")), ("title", .text("first"))]))
                try tx.put(otherEntity, id: .integer(1), row: Row([("id", .integer(1)), ("x", .integer(1))]))
            }
            try expectEqual(try backend.read { try $0.entities() }.map(DescribedEntity.init).sorted { $0.name < $1.name },
                            [DescribedEntity(describedV1), DescribedEntity(otherEntity)], "entities() after the first write")
            let inside = try backend.write { tx -> [EntityDescription] in
                try tx.put(describedV2, id: .text("b"), row: Row([("id", .text("b")), ("title", .text("second")), ("rating", .integer(5))]))
                return try tx.entities()
            }
            try expectEqual(inside.filter { $0.name == describedV2.name }.map(DescribedEntity.init), [DescribedEntity(describedV2)],
                            "entities() inside the write that changed the description")
            try expectEqual(try backend.read { try $0.entities() }.map(DescribedEntity.init).sorted { $0.name < $1.name },
                            [DescribedEntity(describedV2), DescribedEntity(otherEntity)], "entities() after a description changed")
            try backend.write { tx in try tx.delete(otherEntity, id: .integer(1)) }
            try expectEqual(try backend.read { try $0.entities() }.map(DescribedEntity.init), [DescribedEntity(describedV2)],
                            "entities() after every row of \(otherEntity.name) was deleted")
            try backend.write { tx in try tx.put(otherEntity, id: .integer(2), row: Row([("id", .integer(2)), ("x", .integer(2))])) }
            try expectEqual(try backend.read { try $0.entities() }.map(DescribedEntity.init).sorted { $0.name < $1.name },
                            [DescribedEntity(describedV2), DescribedEntity(otherEntity)], "entities() after a row came back")
        },

        ConformanceCase("spi", "withRow(_:id:_:) lends the row row(_:id:) returns, and a row kept from it never changes") { context in
            let backend = context.store.backend
            let stored: [Int64: Row] = [
                1: Row([("id", .integer(1)), ("x", .integer(10)), ("s", .text("one"))]),
                2: Row([("id", .integer(2)), ("x", .integer(20)), ("s", .text("two, a longer text than the first"))]),
                3: Row([("id", .integer(3)), ("x", .real(3.5))]),
            ]
            try backend.write { tx in
                for (id, row) in stored.sorted(by: { $0.key < $1.key }) { try tx.put(otherEntity, id: .integer(id), row: row) }
            }
            // The same ids twice over, in an order that changes the row's shape between calls.
            let order: [Int64] = [1, 2, 3, 99, 1, 3, 2, 2]
            // What row(_:id:) returns (a table backend gives a column the row lacks as null).
            var expected: [Int64: Row] = [:]
            for id in stored.keys { expected[id] = try backend.read { try $0.row(otherEntity.name, id: .integer(id)) } }
            try expectEqual(Set(expected.keys), Set(stored.keys), "the rows row(_:id:) finds")
            func check(_ name: String, _ lend: (Int64, (Row) throws -> Void) throws -> Bool) throws {
                var kept: [(Int64, Row)] = []
                for id in order {
                    var calls = 0
                    let found = try lend(id) { row in
                        calls += 1
                        kept.append((id, row))
                    }
                    try expectEqual(found, stored[id] != nil, "\(name): whether id \(id) was found")
                    try expectEqual(calls, found ? 1 : 0, "\(name): calls of the body for id \(id)")
                }
                for (id, row) in kept {
                    try expectEqual(row, expected[id], "\(name): the row of id \(id), kept while later reads went on")
                }
            }
            try check("the backend's withRow") { id, body in try backend.withRow(otherEntity.name, id: .integer(id), body) }
            try check("a read transaction's withRow") { id, body in
                try backend.read { tx in try tx.withRow(otherEntity.name, id: .integer(id), body) }
            }
            try backend.write { tx in
                try tx.put(otherEntity, id: .integer(4), row: Row([("id", .integer(4)), ("x", .integer(40))]))
                var seen: Row?
                let found = try tx.withRow(otherEntity.name, id: .integer(4)) { seen = $0 }
                try expect(found, "a write's withRow finds the row it put")
                try expectEqual(seen, try tx.row(otherEntity.name, id: .integer(4)), "a write's withRow against its row(_:id:)")
            }
            try expectEqual(try backend.withRow(otherEntity.name, id: .text("not an id")) { _ in }, false, "withRow of a text id in an entity of integer ids")
            try expectEqual(try backend.withRow("conformance_no_such_entity", id: .integer(1)) { _ in }, false, "withRow in an entity never written")
        },

        ConformanceCase("spi", "fetch(_:expecting:each:) and count(_:) on the backend read what a read's fetch and count read") { context in
            let backend = context.store.backend
            // Rows kept as delivered, the counts announced (at most one, before any row).
            func alone(_ query: Query) throws -> [Row] {
                var rows: [Row] = []
                var announced: [Int] = []
                try backend.fetch(query, expecting: { count in
                    announced.append(count)
                    if !rows.isEmpty { announced.append(-1) }
                }, each: { rows.append($0) })
                try expect(announced.count <= 1 && announced.allSatisfy { $0 == rows.count },
                           "the counts announced before \(rows.count) rows of \(query): \(announced) (-1: announced after a row)")
                return rows
            }
            let all = try Query(entity: otherEntity)
            try expectEqual(try alone(all), [], "the backend's fetch in an entity never written")
            try expectEqual(try backend.count(all), 0, "the backend's count in an entity never written")
            try backend.write { tx in
                for id in 1...6 {
                    var columns: [(String, Value)] = [("id", .integer(Int64(id))), ("x", id == 3 ? .real(3.5) : .integer(Int64(id * 10)))]
                    if id % 2 == 0 { columns.append(("s", .text(String(repeating: "t", count: id * 5)))) }
                    try tx.put(otherEntity, id: .integer(Int64(id)), row: Row(columns))
                }
            }
            let queries = [
                all,
                try Query(entity: otherEntity, predicate: .compare(column: "x", .greater, .integer(15))),
                try Query(entity: otherEntity, sort: [SortTerm(column: "x", ascending: false)]),
                try Query(entity: otherEntity, sort: [SortTerm(column: "s")], limit: 3, offset: 1),
                try Query(entity: otherEntity, predicate: .compare(column: "x", .equal, .text("none"))),
            ]
            for query in queries {
                let rows = try backend.read { try $0.fetch(query) }
                try expectEqual(try alone(query), rows, "the backend's fetch of \(query) against a read's")
                try expectEqual(try backend.count(query), rows.count, "the backend's count of \(query) against a read's fetch")
                try expectEqual(try backend.count(query), try backend.read { try $0.count(query) }, "the backend's count of \(query) against a read's")
            }
            // A later commit is seen by the next fetch.
            try backend.write { tx in try tx.put(otherEntity, id: .integer(1), row: Row([("id", .integer(1)), ("x", .integer(99))])) }
            try expectEqual(try alone(queries[1]).map { $0.value("id") }, [1, 2, 4, 5, 6].map { Value.integer($0) }, "the backend's fetch after a commit")
            try expectEqual(try backend.count(queries[1]), 5, "the backend's count after a commit")
        },

        ConformanceCase("spi", "scan(_:expecting:rows:readers:) hands over exactly the rows fetch passes; a reader decodes as its row") { context in
            let backend = context.store.backend
            // One value of every kind in "x"; "s" only in some rows, so rows differ in shape.
            let kinds: [Value] = [.null, .integer(7), .integer(.min), .real(2.5), .real(-3), .text("seven"), .text(""),
                                  .text(String(repeating: "long text ", count: 4)), .blob(Data([0, 1, 2])), .blob(Data()), .text("12")]
            try backend.write { tx in
                for (offset, value) in kinds.enumerated() {
                    let id = Int64(offset + 1)
                    var columns: [(String, Value)] = [("id", .integer(id)), ("x", value)]
                    if offset % 3 == 0 { columns.append(("s", .text("s\(id)"))) }
                    try tx.put(otherEntity, id: .integer(id), row: Row(columns))
                }
            }
            // A decode's outcome, told apart by value or by error code and message.
            func outcome<T: ValueConvertible>(_ read: () throws -> T) -> String {
                do { return "\(try read())" } catch let error as ReservoirError { return "\(error.code): \(error.message)" } catch { return "\(error)" }
            }
            func compare<T: ValueConvertible>(_ type: T.Type, _ reader: borrowing RowReader, _ row: Row, _ what: String) throws {
                for column in row.columns + ["missing"] {
                    for position in [nil, 0, 1, row.index(of: column)] {
                        let lent = outcome { try reader.decode(column, as: T.self, at: position) }
                        let kept = outcome { try row.decode(column, as: T.self, at: position) }
                        try expectEqual(lent, kept, "\(what): column \(column) read as \(T.self) at \(String(describing: position)) from the reader, against the row")
                    }
                }
            }
            typealias Scan = ((Int) -> Void, (Row) throws -> Void, (borrowing RowReader) throws -> Void) throws -> Void
            func check(_ what: String, _ scan: Scan, against rows: [Row]) throws {
                var seen: [Row] = []
                var announced: [Int] = []
                try scan({ count in
                    announced.append(count)
                    if !seen.isEmpty { announced.append(-1) }
                }, { row in seen.append(row) }, { reader in
                    let row = reader.row()
                    try expectEqual(reader.columns, row.columns, "\(what): the reader's columns against its row's")
                    for column in row.columns + ["missing"] {
                        try expect(reader.value(column).isIdentical(to: row.value(column)), "\(what): value of \(column) from the reader, \(reader.value(column)), against its row's \(row.value(column))")
                    }
                    if seen.count < rows.count {
                        let expected = rows[seen.count]
                        try compare(Int.self, reader, expected, what)
                        try compare(Int64.self, reader, expected, what)
                        try compare(Int32.self, reader, expected, what)
                        try compare(UInt8.self, reader, expected, what)
                        try compare(Double.self, reader, expected, what)
                        try compare(Float.self, reader, expected, what)
                        try compare(Bool.self, reader, expected, what)
                        try compare(String.self, reader, expected, what)
                        try compare(Data.self, reader, expected, what)
                        try compare(Int?.self, reader, expected, what)
                        try compare(Int64?.self, reader, expected, what)
                        try compare(Double?.self, reader, expected, what)
                        try compare(String?.self, reader, expected, what)
                        try compare(Date?.self, reader, expected, what)
                        try compare(Value.self, reader, expected, what)
                    }
                    seen.append(row)
                })
                try expectEqual(seen, rows, "\(what): the rows handed over against fetch's")
                try expect(announced.count <= 1 && announced.allSatisfy { $0 == seen.count },
                           "\(what): the counts announced before \(seen.count) rows: \(announced) (-1: announced after a row)")
            }
            let queries = [
                try Query(entity: otherEntity),
                try Query(entity: otherEntity, sort: [SortTerm(column: "s", ascending: false), SortTerm(column: "id")], limit: 6, offset: 2),
                try Query(entity: otherEntity, predicate: .compare(column: "x", .equal, .text("none"))),
                try Query(entity: describedV1),
            ]
            for query in queries {
                let rows = try backend.read { try $0.fetch(query) }
                try check("the backend's scan of \(query)", { try backend.scan(query, expecting: $0, rows: $1, readers: $2) }, against: rows)
                try backend.read { tx in
                    try check("a read's scan of \(query)", { try tx.scan(query, expecting: $0, rows: $1, readers: $2) }, against: rows)
                }
            }
            // Inside a write, a scan reads the write's own rows.
            try backend.write { tx in
                try tx.put(otherEntity, id: .integer(100), row: Row([("id", .integer(100)), ("x", .text("written"))]))
                let rows = try tx.fetch(queries[0])
                try expect(rows.contains { $0.value("id") == .integer(100) }, "a write's fetch sees its own row")
                try check("a write's scan", { try tx.scan(queries[0], expecting: $0, rows: $1, readers: $2) }, against: rows)
            }
            // A body that throws stops the scan, and the error reaches the caller.
            struct Stop: Error {}
            var calls = 0
            do {
                try backend.scan(queries[0], expecting: { _ in }, rows: { _ in
                    calls += 1
                    throw Stop()
                }, readers: { _ in
                    calls += 1
                    throw Stop()
                })
                throw ConformanceFailure(message: "a scan whose body throws did not throw", file: #fileID, line: #line)
            } catch is Stop {}
            try expectEqual(calls, 1, "calls to a scan's bodies after one threw")
            try expectEqual(try backend.read { try $0.fetch(queries[0]) }.count, kinds.count + 1, "rows after a scan stopped by its body")
        },

        ConformanceCase("spi", "a backend transaction used after its closure is refused") { context in
            let backend = context.store.backend
            let query = try Query(entity: otherEntity)
            nonisolated(unsafe) var escapedWrite: (any WriteTransaction)?
            try backend.write { tx in
                try tx.put(otherEntity, id: .integer(1), row: Row([("id", .integer(1)), ("x", .integer(1))]))
                escapedWrite = tx
            }
            nonisolated(unsafe) var escapedRead: (any ReadTransaction)?
            try backend.read { tx in escapedRead = tx }
            guard let write = escapedWrite, let read = escapedRead else {
                throw ConformanceFailure(message: "no transaction escaped", file: #fileID, line: #line)
            }
            for (name, reader) in [("read", read), ("write", write as any ReadTransaction)] {
                try expectError(.misuse, "row(_:id:) on an ended \(name) transaction") { try reader.row(otherEntity.name, id: .integer(1)) }
                try expectError(.misuse, "withRow(_:id:_:) on an ended \(name) transaction") { try reader.withRow(otherEntity.name, id: .integer(1)) { _ in } }
                try expectError(.misuse, "fetch(_:) on an ended \(name) transaction") { try reader.fetch(query) }
                try expectError(.misuse, "fetch(_:each:) on an ended \(name) transaction") { try reader.fetch(query) { _ in } }
                try expectError(.misuse, "fetch(_:expecting:each:) on an ended \(name) transaction") { try reader.fetch(query, expecting: { _ in }) { _ in } }
                try expectError(.misuse, "scan(_:expecting:rows:readers:) on an ended \(name) transaction") {
                    try reader.scan(query, expecting: { _ in }, rows: { _ in }, readers: { _ in })
                }
                try expectError(.misuse, "count(_:) on an ended \(name) transaction") { try reader.count(query) }
                try expectError(.misuse, "entities() on an ended \(name) transaction") { try reader.entities() }
                try expectError(.misuse, "lastSequence() on an ended \(name) transaction") { try reader.lastSequence() }
                try expectError(.misuse, "changeLog(after:limit:) on an ended \(name) transaction") { try reader.changeLog(after: 0, limit: .max) }
            }
            let late = Row([("id", .integer(2)), ("x", .integer(2))])
            try expectError(.misuse, "put(_:id:row:) on an ended write transaction") { try write.put(otherEntity, id: .integer(2), row: late) }
            try expectError(.misuse, "insert(_:id:row:) on an ended write transaction") { try write.insert(otherEntity, id: .integer(3), row: late) }
            try expectError(.misuse, "delete(_:id:) on an ended write transaction") { try write.delete(otherEntity, id: .integer(1)) }
            let lastSequence = try backend.read { try $0.lastSequence() }
            try expectError(.misuse, "record(_:) on an ended write transaction") {
                try write.record(ChangeSet(sequence: lastSequence + 1, entities: [EntityChanges(entity: otherEntity.name, deleted: [.integer(1)])]))
            }
            let rows = try backend.read { try $0.fetch(query) }
            try expectEqual(rows.map { $0.value("id") }, [.integer(1)], "rows after the refused calls")
            try expectEqual(try backend.read { try $0.lastSequence() }, lastSequence, "lastSequence() after the refused record(_:)")
        },

        ConformanceCase("spi", "every call after close() is refused with .closed") { context in
            let backend = context.store.backend
            try backend.write { tx in try tx.put(otherEntity, id: .integer(1), row: Row([("id", .integer(1)), ("x", .integer(1))])) }
            backend.close()
            backend.close()  // idempotent
            try expectError(.closed, "read(_:) after close()") { try backend.read { try $0.row(otherEntity.name, id: .integer(1)) } }
            try expectError(.closed, "row(_:id:) after close()") { try backend.row(otherEntity.name, id: .integer(1)) }
            try expectError(.closed, "withRow(_:id:_:) after close()") { try backend.withRow(otherEntity.name, id: .integer(1)) { _ in } }
            try expectError(.closed, "write(_:) after close()") {
                try backend.write { tx in try tx.put(otherEntity, id: .integer(2), row: Row([("id", .integer(2)), ("x", .integer(2))])) }
            }
            try expectError(.closed, "commitToken() after close()") { try backend.commitToken() }
        },

        ConformanceCase("spi", "a second opener of a single-process location gets .busy until the first closes",
                        requires: .persistent, excludes: .multiProcess) { context in
            try context.store.write { tx in try tx.insert(Item(id: 1, name: "first opener")) }
            try expectError(.busy, "opening \(context.configuration) while a store has it open") { try context.openAnother() }
            try expectEqual(try context.store.ids(FetchRequest()), [1], "the first store's records after the refused opener")
            try context.store.write { tx in try tx.insert(Item(id: 2, name: "still writable")) }
            context.store.close()
            let reopened = try context.openAnother()
            try expectEqual(try reopened.ids(FetchRequest()), [1, 2], "records through the opener after the first closed")
        },
    ]
}
