import Foundation
import Reservoir
import Testing

private struct Place: Codable, Equatable, Sendable {
    var name: String
    var floor: Int
}

/// A hand-written schema naming nested values (stored as opaque columns) and, through
/// `naming(unstored:)`, a property it does not store.
private struct Message: Storable {
    var id: Int
    var text: String
    var reactions: [String: Int]
    var place: Place?
    var isSelected = false
    var preview: String { String(text.prefix(3)) }
    enum CodingKeys: String, CodingKey { case id, text, reactions, place }
    static let schema = Schema<Message>("messages", fields: [
        .field(\.text), .field(\.reactions), .field(\.place, column: "place"),
    ]).naming(unstored: [.notInCodingKeys(\.isSelected, "isSelected")])
}

/// Names an opaque field under a column its `Codable` encoding does not have.
private struct Misnamed: Storable {
    var id: Int
    var tags: [String]
    static let schema = Schema<Misnamed>("misnamed", fields: [.field(\.tags, column: "labels")])
}

@Suite("Schema fields: opaque nested values, unstored properties")
struct SchemaFieldTests {
    private let message = Message(id: 1, text: "Hello", reactions: ["👍": 2, "🎉": 1], place: Place(name: "Hall", floor: 2))

    @Test("ValueConvertible types get the queryable field, nested Codable values the opaque one")
    func overloads() {
        #expect(Schema<Message>.Field.field(\.text).queryable)
        #expect(Schema<Message>.Field.field(\.id, indexed: true).queryable)
        #expect(!Schema<Message>.Field.field(\.reactions).queryable)
        #expect(!Schema<Message>.Field.field(\.place).queryable)
        #expect(Message.schema.fields.map(\.column) == ["id", "text", "reactions", "place"])
        #expect(Message.schema.entity.fields == ["id", "text"], "opaque columns are stored, but backends are not asked to query them")
    }

    @Test("opaque fields store and read back; a query on one, or on an unstored property, names it")
    func storeAndQuery() throws {
        let store = try Store.open("memory:")
        defer { store.close() }
        var selected = message
        selected.isSelected = true
        try store.write { try $0.insert(selected) }
        #expect(try store.get(Message.self, id: 1) == message)
        #expect(try store.fetch(FetchRequest<Message>(where: \.text == "Hello")) == [message])

        let opaque = #expect(throws: ReservoirError.self) { try Message.schema.column(for: \Message.reactions) }
        #expect(opaque?.code == .invalidQuery)
        #expect(opaque?.message.contains(#"\Message.reactions is stored as one opaque column, "reactions""#) == true, "\(opaque?.message ?? "")")

        let unstored = #expect(throws: ReservoirError.self) { try store.fetch(FetchRequest<Message>(where: \.isSelected == true)) }
        #expect(unstored?.code == .invalidQuery)
        #expect(unstored?.message.contains("Message.isSelected is not stored (CodingKeys leave it out)") == true, "\(unstored?.message ?? "")")
        #expect(unstored?.message.contains(#"the schema "messages" can query id, text"#) == true, "\(unstored?.message ?? "")")
    }

    @Test("a computed property no schema names is still called a computed property, with the columns that can be queried")
    func computedWithoutName() {
        let error = #expect(throws: ReservoirError.self) {
            try FetchRequest<Message>(sortBy: [.ascending(\.preview)]).query()
        }
        #expect(error?.message.contains("is not stored (it is a computed property of Message") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(#"the schema "messages" can query id, text"#) == true, "\(error?.message ?? "")")
    }

    @Test("an opaque field under a column the record does not encode is refused on first use")
    func misnamedOpaqueField() throws {
        let store = try Store.open("memory:")
        defer { store.close() }
        let error = #expect(throws: ReservoirError.self) { try store.write { try $0.insert(Misnamed(id: 1, tags: ["a"])) } }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains(#"names column "labels""#) == true, "\(error?.message ?? "")")
    }
    @Test("a key path's field is found again from the schema's memory, and the same as the first time")
    func rememberedFields() throws {
        let schema = Message.schema
        for _ in 0..<3 {
            // Literals from two call sites, a key path made at run time, and one the schema lacks.
            #expect(try schema.column(for: \Message.text) == "text")
            #expect(try schema.column(for: \Message.id) == "id")
            #expect(schema.field(for: \Message.place)?.column == "place")
            let built: AnyKeyPath = (\Message.place).appending(path: \Place?.?.name)
            #expect(schema.field(for: built) == nil, "a key path equal to no field's finds none")
            #expect(schema.field(for: \Message.isSelected) == nil)
        }
        #expect(try schema.column(for: \Message.text) == "text", "a literal at another site, another object, finds the same field")
        // Many distinct key path objects: past the memory's limit they are still answered, by search.
        for _ in 0..<300 {
            let made: AnyKeyPath = (\Message.place).appending(path: \Place?.?.name)
            #expect(schema.field(for: made) == nil)
            let text: AnyKeyPath = (\Message.self).appending(path: \Message.text)
            #expect(schema.field(for: text)?.column == "text")
        }
    }
}
