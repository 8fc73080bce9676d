import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// The backend through `Store`: what apps see.
@Suite struct StoreTests {
    @Test func insertFetchSortAndPredicatesWithNulls() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        let todos = [
            Todo(id: 1, title: "Buy milk", done: false, priority: 2, note: nil),
            Todo(id: 2, title: "buy bread", done: true, priority: 1, note: "bakery"),
            Todo(id: 3, title: "Call Émile", done: false, priority: 3, note: ""),
            Todo(id: 4, title: "a\0b", done: false, priority: 2, note: nil),
        ]
        try store.write { tx in for todo in todos { try tx.insert(todo) } }

        #expect(try store.fetch(Todo.self) == todos)
        #expect(try store.get(Todo.self, id: 3) == todos[2])
        #expect(try store.get(Todo.self, id: 9) == nil)
        let byPriority = try store.fetch(FetchRequest<Todo>(sortBy: [.descending(\.priority)]))
        #expect(byPriority.map(\.id) == [3, 1, 4, 2])
        #expect(try store.fetch(FetchRequest<Todo>(where: \.note == nil)).map(\.id) == [1, 4])
        #expect(try store.fetch(FetchRequest<Todo>(where: \.note != nil)).map(\.id) == [2, 3])
        #expect(try store.fetch(FetchRequest<Todo>(where: !(\Todo.note >= ""))).map(\.id) == [1, 4])
        #expect(try store.fetch(FetchRequest<Todo>(where: .hasPrefix(\.title, "Buy"))).map(\.id) == [1])
        #expect(try store.fetch(FetchRequest<Todo>(where: .contains(\.title, "Émile"))).map(\.id) == [3])
        #expect(try store.fetch(FetchRequest<Todo>(where: .contains(\.title, "\0"))).map(\.id) == [4])
        #expect(try store.fetch(FetchRequest<Todo>(where: .isIn(\.note, [nil, "bakery"]))).map(\.id) == [1, 2, 4])
        #expect(try store.count(FetchRequest<Todo>(where: \.done == false, limit: 2)) == 2)
        #expect(try store.fetch(FetchRequest<Todo>(sortBy: [.ascending(\.title)], limit: 2, offset: 1)).map(\.id) == [3, 4])
    }

    @Test func mixedIntegersAndRealsCompareNumerically() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        let entity = Measurement.schema.entity
        try store.write { tx in
            try tx.putRow(Row([("id", "a"), ("value", .integer(2))]), in: entity)
            try tx.putRow(Row([("id", "b"), ("value", .real(1.5))]), in: entity)
            try tx.putRow(Row([("id", "c"), ("value", .real(2.0))]), in: entity)
            try tx.putRow(Row([("id", "d"), ("value", .text("1"))]), in: entity)
            try tx.putRow(Row([("id", "e"), ("value", .null)]), in: entity)
        }
        let ids = { (predicate: RecordPredicate<Measurement>?) in
            try store.fetch(FetchRequest<Measurement>(where: predicate, sortBy: [.ascending(\.value)])).map(\.id)
        }
        #expect(throws: ReservoirError.self) { try ids(nil) }  // "d" holds text where a Double is expected
        try store.write { tx in _ = try tx.delete(Measurement.self, id: "d") }
        #expect(try ids(nil) == ["e", "b", "a", "c"])
        #expect(try ids(\.value == 2.0) == ["a", "c"])
        #expect(try ids(\.value > 1.5) == ["a", "c"])
        #expect(try ids(!(\Measurement.value > 1.5)) == ["e", "b"])
    }

    @Test func reopeningKeepsEverythingAndLayoutIsPlainSQL() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let todo = Todo(id: 7, title: "Persist", done: true, priority: 5, note: nil)
        do {
            let store = try openStore(directory.databasePath)
            try store.write { try $0.insert(todo) }
            store.close()
        }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        #expect(try store.fetch(Todo.self) == [todo])
        #expect(try store.read { try $0.lastSequence() } == 1)
        #expect(try store.read { try $0.entities() }.map(\.name) == ["todos"])

        let raw = try RawConnection(directory.databasePath)
        #expect(try raw.query("SELECT id, title, done, priority, note, typeof(title), typeof(note) FROM todos")
            == [["7", "Persist", "1", "5", nil, "text", "null"]])
        #expect(try raw.query("SELECT name FROM pragma_index_list('todos') WHERE name LIKE '_reservoir_index_%'") == [["_reservoir_index_todos_priority"]])
        #expect(try raw.query("PRAGMA journal_mode") == [["wal"]])
    }

    @Test func aFieldAddedLaterReadsAsNilInOldRows() throws {
        struct TodoV1: Storable {
            var id: Int
            var title: String
            static let schema = Schema<TodoV1>("todos", fields: [.field(\.title)])
        }
        struct TodoV2: Storable {
            var id: Int
            var title: String
            var tag: String?
            static let schema = Schema<TodoV2>("todos", fields: [.field(\.title), .field(\.tag, indexed: true)])
        }
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { try $0.insert(TodoV1(id: 1, title: "old")) }
        try store.write { try $0.insert(TodoV2(id: 2, title: "new", tag: "x")) }
        #expect(try store.fetch(TodoV2.self) == [TodoV2(id: 1, title: "old", tag: nil), TodoV2(id: 2, title: "new", tag: "x")])
        #expect(try store.fetch(FetchRequest<TodoV2>(where: \.tag == nil)).map(\.id) == [1])
        // Writing an identical record back is no change.
        #expect(try store.write { try $0.upsert(TodoV2(id: 1, title: "old", tag: nil)) } == nil)
    }

    /// The writer lends a row's texts and blobs to SQLite from a buffer reused row after row
    /// and grown as rows grow: every value must land whole, in its own parameter, whatever
    /// the sizes before and after it (empty, small strings, growing, past the buffer's limit).
    @Test func textsAndBlobsOfEverySizeLandWholeRowAfterRow() throws {
        struct Attachment: Storable, Equatable {
            var id: String
            var name: String
            var body: Data
            var caption: String?
            static let schema = Schema<Attachment>("attachments", fields: [.field(\.name), .field(\.body), .field(\.caption)])
        }
        var state: UInt64 = 7
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let sizes = [0, 1, 15, 16, 300, 40, 5_000, 3, 70_000, 0, 200_000, 9, 1_000, 64 * 1024, 2]
        func attachment(_ index: Int, size: Int) -> Attachment {
            let letters = Array("aé€𝄞z\0".unicodeScalars)
            var name = "n\(index)-"
            for _ in 0..<size { name.unicodeScalars.append(letters[next(letters.count)]) }
            let body = Data((0..<(sizes[(index + 3) % sizes.count])).map { _ in UInt8(next(256)) })
            return Attachment(id: "id-\(index)-" + String(repeating: "k", count: next(40)), name: name, body: body,
                              caption: index % 4 == 0 ? nil : String(repeating: "c", count: sizes[(index + 7) % sizes.count]))
        }
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        var expected = sizes.indices.map { attachment($0, size: sizes[$0]) } + (15..<60).map { attachment($0, size: next(3_000)) }
        try store.write { tx in for item in expected { try tx.insert(item) } }
        #expect(try store.fetch(FetchRequest<Attachment>(sortBy: [.ascending(\.id)])) == expected.sorted { $0.id < $1.id })
        // Replacing through the upsert statement, sizes shuffled, in one transaction and one each.
        for index in expected.indices where index % 2 == 0 {
            expected[index] = Attachment(id: expected[index].id, name: attachment(index, size: sizes[(index + 5) % sizes.count]).name,
                                         body: attachment(index + 1, size: 1).body, caption: "updated \(index)")
        }
        try store.write { tx in for (index, item) in expected.enumerated() where index % 2 == 0 { try tx.upsert(item) } }
        for item in expected.suffix(5) { try store.write { try $0.upsert(item) } }
        #expect(try store.fetch(FetchRequest<Attachment>(sortBy: [.ascending(\.id)])) == expected.sorted { $0.id < $1.id })
        // Stored as SQLite text and blob, byte for byte, as another client reads them.
        let raw = try RawConnection(directory.databasePath)
        let stored = try raw.query("SELECT id, typeof(name), length(CAST(name AS BLOB)), typeof(body), length(body) FROM attachments ORDER BY id")
        #expect(stored == expected.sorted { $0.id < $1.id }.map { item in
            [item.id, "text", String(item.name.utf8.count), "blob", String(item.body.count)]
        })
    }

    @Test func aThrowingWriteLeavesNothingBehind() throws {
        struct Boom: Error {}
        struct Fresh: Storable {
            var id: Int
            var extra: Int
            static let schema = Schema<Fresh>("fresh", fields: [.field(\.extra)])
        }
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        #expect(throws: Boom.self) {
            try store.write { tx in
                try tx.insert(Fresh(id: 1, extra: 1))
                throw Boom()
            }
        }
        #expect(try store.fetch(Fresh.self).isEmpty)
        try store.write { try $0.insert(Fresh(id: 2, extra: 2)) }
        #expect(try store.fetch(Fresh.self) == [Fresh(id: 2, extra: 2)])
        #expect(try store.read { try $0.lastSequence() } == 1)
    }

    @Test func readsDoNotWaitForTheWriter() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { try $0.insert(Todo(id: 1, title: "one", done: false, priority: 1)) }
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? store.write { tx in
                try tx.insert(Todo(id: 2, title: "two", done: false, priority: 1))
                inside.signal()
                release.wait()
            }
            finished.signal()
        }
        inside.wait()
        // The writer holds its transaction open; a read sees the last commit at once.
        #expect(try store.fetch(Todo.self).map(\.id) == [1])
        release.signal()
        finished.wait()
        #expect(try store.fetch(Todo.self).map(\.id) == [1, 2])
    }
}
