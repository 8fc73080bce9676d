import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import ReservoirTestRecords
import Testing

/// The write transaction's short cuts: `BEGIN` sent with the first read, built from the
/// catalog the store last knew; one-record inserts above the largest id sent without an
/// answer awaited, as INSERTs and then through `COPY`.
@Suite("PostgreSQL: the commit path")
struct CommitPathTests {
    static let things = EntityDescription(name: "things", idColumn: "id", fields: ["id", "name"])

    static func thing(_ id: Int64, _ name: Value) -> Row {
        Row([("id", .integer(id)), ("name", name)])
    }

    static func name(_ store: Store, _ id: Int64) throws -> Value? {
        try store.read { try $0.rows(Query(entity: things, predicate: .compare(column: "id", .equal, .integer(id)))) }.first?.value("name")
    }

    @Test func aOneRecordInsertOfAnExistingIDIsStillADuplicate() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        for id in [5, 1, 3] { try store.write { try $0.insert(Message(id: id, author: 1, body: "first \(id)")) } }
        for id in [1, 3, 5] {
            let error = #expect(throws: ReservoirError.self) {
                try store.write { try $0.insert(Message(id: id, author: 2, body: "again")) }
            }
            #expect(error?.code == .duplicateID, "insert of existing id \(id): \(String(describing: error))")
        }
        // Above the largest, after the largest was deleted: new, and one commit each.
        try store.write { _ = try $0.delete(Message.self, id: 5) }
        try store.write { try $0.insert(Message(id: 5, author: 3, body: "back")) }
        try store.write { try $0.insert(Message(id: 6, author: 3, body: "next")) }
        let error = #expect(throws: ReservoirError.self) {
            try store.write { try $0.insert(Message(id: 6, author: 4, body: "twice")) }
        }
        #expect(error?.code == .duplicateID)
        let stored = try store.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))
        #expect(stored.map(\.id) == [1, 3, 5, 6])
        #expect(stored.map(\.body) == ["first 1", "first 3", "back", "next"])
        #expect(try store.read { try $0.lastSequence() } == 6)
    }

    /// The meta row failing in the first pipeline (here: the schema dropped under the store)
    /// is reported as the ordinary begin reports it, naming the server.
    @Test func aFirstReadOnADroppedStoreSaysItIsGone() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { try $0.insert(Message(id: 1, author: 1, body: "one")) }
        try PostgresBackend.dropStore(configuration)
        let error = #expect(throws: ReservoirError.self) {
            try store.write { try $0.update(Message(id: 1, author: 1, body: "uno")) }
        }
        #expect(error?.code == .gone, "\(String(describing: error))")
        #expect(error?.message.contains("PostgreSQL store") == true, "\(String(describing: error))")
    }

    @Test func insertsPastTheQueuedOnesStreamAndAreReadInTheirTransaction() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { tx in
            for id in 1...40 {
                try tx.insert(Message(id: id, author: id % 3, body: "m\(id)"))
                // Reads in between send what is queued (the INSERTs, then the open COPY).
                if id == 10 || id == 30 {
                    #expect(try tx.get(Message.self, id: id)?.body == "m\(id)")
                    #expect(try tx.count(FetchRequest<Message>()) == id)
                }
            }
            let error = #expect(throws: ReservoirError.self) { try tx.insert(Message(id: 25, author: 0, body: "dup")) }
            #expect(error?.code == .duplicateID)
        }
        #expect(try store.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)])).map(\.id) == Array(1...40))
    }

    /// A run of rows streaming into a `COPY` keeps its table and floor to itself; a write
    /// of another kind in between (an upsert above the floor, another entity's first row,
    /// which changes the schema) ends it, so what follows is judged on the true floor.
    @Test func aStreamingRunEndsAtAnyOtherWrite() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        try store.write { tx in
            for id in 1...30 { try tx.insert(Message(id: id, author: 1, body: "m\(id)")) }
            try tx.upsert(Message(id: 50, author: 2, body: "fifty"))
            let duplicate = #expect(throws: ReservoirError.self) { try tx.insert(Message(id: 50, author: 3, body: "again")) }
            #expect(duplicate?.code == .duplicateID)
            for id in 31...40 { try tx.insert(Message(id: id, author: 1, body: "m\(id)")) }
            try tx.insert(Note(id: 1, title: "first note"))
            for id in 51...70 { try tx.insert(Message(id: id, author: 1, body: "m\(id)")) }
            let again = #expect(throws: ReservoirError.self) { try tx.insert(Message(id: 60, author: 3, body: "again")) }
            #expect(again?.code == .duplicateID)
        }
        let stored = try store.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))
        #expect(stored.map(\.id) == Array(1...40) + [50] + Array(51...70))
        #expect(stored.first { $0.id == 50 }?.body == "fifty")
        #expect(try store.fetch(FetchRequest<Note>()).map(\.title) == ["first note"])
    }

    /// Another client's schema change (a new column, a column made mixed) outdates the
    /// catalog the first read was built from: that read is run again, never answered from
    /// the old table shape.
    @Test func aFirstReadAfterAnotherClientsSchemaChangeSeesTheNewShape() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let mine = try Store.open(configuration, registry: TestServer.registry)
        defer { mine.close() }
        let other = try Store.open(configuration, registry: TestServer.registry)
        defer { other.close() }
        try mine.write { _ = try $0.putRow(Self.thing(1, .text("one")), in: Self.things) }

        // A new column, from the other store.
        let wider = EntityDescription(name: "things", idColumn: "id", fields: ["id", "name", "size"])
        try other.write { _ = try $0.putRow(Row([("id", .integer(2)), ("name", .text("two")), ("size", .integer(9))]), in: wider) }
        // Written again unchanged, it is no change: the first read (the previous row) saw the
        // new column.
        let same = Row([("id", .integer(2)), ("name", .text("two")), ("size", .integer(9))])
        #expect(try mine.write { try $0.putRow(same, in: wider) } == nil)

        // The name column made mixed (text, then an integer): the first store's prepared
        // point read no longer fits the table.
        try other.write { _ = try $0.putRow(Self.thing(3, .integer(33)), in: Self.things) }
        // (The row read back also holds the other store's column, null here.)
        let unchanged = Row([("id", .integer(3)), ("name", .integer(33)), ("size", .null)])
        #expect(try mine.write { try $0.putRow(unchanged, in: Self.things) } == nil)
        #expect(try mine.write { try $0.putRow(Self.thing(1, .text("uno")), in: Self.things) } == .updated)
        #expect(try Self.name(mine, 1) == .text("uno"))
        #expect(try Self.name(mine, 3) == .integer(33))
        #expect(try Self.name(other, 1) == .text("uno"))
        #expect(try mine.read { try $0.lastSequence() } == 4)
    }
}
