import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirMacros
import ReservoirPostgres
import ReservoirSQLite
import Testing

struct Attachment: Codable, Equatable, Sendable {
    var name: String
    var bytes: Int
}

/// A chat message with every kind of member `@Storable` treats differently.
@Storable("chat_messages")
struct ChatMessage {
    var id: Int
    @Indexed var channel: String
    var text: String
    var score: Int
    @Column("sent_at") var sentAt: Date
    var reactions: [String: Int] = [:]
    var attachments: [Attachment] = []
    var replyTo: Int?
    @Transient var isSelected = false
    var preview: String { String(text.prefix(5)) }
}

/// A fresh store on each built-in backend; PostgreSQL's on the server scripts/with-postgres
/// starts (RESERVOIR_TEST_POSTGRES), in a schema of its own.
enum TestBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, sqlite, lmdb, postgres

    var testDescription: String { rawValue }

    /// A configuration for a new, empty store, the registry that opens it, and what removes it.
    func fresh() throws -> (configuration: String, registry: BackendRegistry, cleanup: @Sendable () -> Void) {
        let directory = FileManager.default.temporaryDirectory.path + "/reservoir-storable-" + UUID().uuidString
        let removeDirectory: @Sendable () -> Void = { try? FileManager.default.removeItem(atPath: directory) }
        switch self {
        case .memory:
            return ("memory:", BackendRegistry(), {})
        case .sqlite:
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return ("sqlite:\(directory)/db.sqlite", BackendRegistry([.sqlite]), removeDirectory)
        case .lmdb:
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return ("lmdb:\(directory)/env", BackendRegistry([.lmdb]), removeDirectory)
        case .postgres:
            guard let url = ProcessInfo.processInfo.environment["RESERVOIR_TEST_POSTGRES"], !url.isEmpty else {
                throw ReservoirError(.cannotOpen, "RESERVOIR_TEST_POSTGRES is not set: run the tests with scripts/test or scripts/with-postgres, which start a throwaway PostgreSQL server (apt-get install postgresql), or point it at a server of yours")
            }
            let schema = "s_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
            let configuration = url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
            return (configuration, BackendRegistry([.postgres]), { try? PostgresBackend.dropStore(configuration) })
        }
    }

    var persistent: Bool { self != .memory }
}

@Suite("@Storable records on every backend")
struct StorableRecordTests {
    static let start = Date(timeIntervalSinceReferenceDate: 800_000_000)

    static func message(_ id: Int, _ channel: String, _ text: String, score: Int, reactions: [String: Int] = [:]) -> ChatMessage {
        ChatMessage(id: id, channel: channel, text: text, score: score, sentAt: start.addingTimeInterval(Double(id)),
                    reactions: reactions, attachments: id.isMultiple(of: 2) ? [Attachment(name: "a\(id).png", bytes: id * 100)] : [],
                    replyTo: id > 1 ? id - 1 : nil)
    }

    @Test("rows hold the stored properties under their columns, as Codable encodes them")
    func rows() throws {
        var record = Self.message(2, "general", "Hello there", score: 3, reactions: ["👍": 2])
        record.isSelected = true
        let row = try record.makeRow()
        #expect(row.columns == ["id", "channel", "text", "score", "sent_at", "reactions", "attachments", "replyTo"])
        #expect(row == (try RowEncoder().encode(record)), "the CodingKeys @Storable writes make Codable agree")
        #expect(row["reactions"] == .text(#"{"👍":2}"#))
        var expected = record
        expected.isSelected = false
        #expect(try ChatMessage(row: row) == expected)
        #expect(try RowDecoder().decode(ChatMessage.self, from: row) == expected)
        #expect(ChatMessage.schema.entity.fields == ["id", "channel", "text", "score", "sent_at", "replyTo"])
        #expect(ChatMessage.schema.entity.indexes == ["channel"])
    }

    @Test("store, fetch, observe and reopen", arguments: TestBackend.allCases)
    func storeFetchObserve(backend: TestBackend) async throws {
        let (configuration, registry, cleanup) = try backend.fresh()
        defer { cleanup() }
        var store = try Store.open(configuration, registry: registry)
        defer { store.close() }

        let general = FetchRequest<ChatMessage>(where: \.channel == "general" && \.score >= 2, sortBy: [.descending(\.sentAt)])
        let differences = Collected<CollectionDifference<ChatMessage>>()
        let failures = Collected<String>()
        let watching = store.differencesPublisher(for: general).sink(receiveCompletion: { completion in
            if case let .failure(error) = completion { failures.append("\(error)") }
        }, receiveValue: { differences.append($0) })

        // In an async function `store.write` is the async overload: its closure is @Sendable.
        var selected = Self.message(1, "general", "Hello, everyone", score: 3, reactions: ["👋": 1])
        selected.isSelected = true
        let first = selected
        try await store.write { tx in
            try tx.insert(first)
            try tx.insert(Self.message(2, "random", "Lunch?", score: 5))
            try tx.insert(Self.message(3, "general", "Minutes attached", score: 2))
            try tx.insert(Self.message(4, "general", "low score", score: 1))
        }
        let edited = Self.message(3, "general", "Minutes attached", score: 4, reactions: ["👍": 2, "🎉": 1])
        try await store.write { tx in
            try tx.update(edited)
            _ = try tx.delete(ChatMessage.self, id: 1)
        }
        var reselected = edited
        reselected.isSelected = true
        let unchanged = reselected
        _ = try await store.write { tx in try tx.upsert(unchanged) }

        let fetched = try store.fetch(general)
        #expect(fetched == [Self.message(3, "general", "Minutes attached", score: 4, reactions: ["👍": 2, "🎉": 1])])
        #expect(fetched.first?.isSelected == false, "@Transient is not stored")
        let expectedFirst = Self.message(1, "general", "Hello, everyone", score: 3, reactions: ["👋": 1])
        let arrived = await eventually {
            differences.values.reduce([ChatMessage]()) { $0.applying($1) ?? [] } == fetched && differences.values.count >= 3
        }
        #expect(arrived, "differences applied to [] give the fetch: \(differences.values)")
        #expect(differences.values.first?.isEmpty == true, "the first value is the (empty) current result")
        let inserted = differences.values.dropFirst().first?.insertions.map { change -> ChatMessage? in
            if case let .insert(_, element, _) = change { return element }
            return nil
        }
        #expect(inserted == [Self.message(3, "general", "Minutes attached", score: 2), expectedFirst])
        #expect(failures.values.isEmpty, "\(failures.values)")
        watching.cancel()

        #expect(try store.fetch(FetchRequest<ChatMessage>(sortBy: [.descending(\.score)])).map(\.id) == [2, 3, 4])
        #expect(try store.fetch(FetchRequest<ChatMessage>(where: \.sentAt > Self.start.addingTimeInterval(2.5))).map(\.id) == [3, 4])
        #expect(try store.fetch(FetchRequest<ChatMessage>(where: \.replyTo == nil)).isEmpty)
        #expect(try store.get(ChatMessage.self, id: 2)?.attachments == [Attachment(name: "a2.png", bytes: 200)])

        if backend.persistent {
            store.close()
            store = try Store.open(configuration, registry: registry)
            #expect(try store.fetch(general) == fetched, "read back after reopening")
            #expect(try store.count(FetchRequest<ChatMessage>()) == 3)
        }
    }

    @Test("a predicate or sort on a property that is not stored fails naming it", arguments: [
        (FetchRequest<ChatMessage>(where: \.preview == "Hello"), "ChatMessage.preview is not stored (it is a computed property)"),
        (FetchRequest<ChatMessage>(sortBy: [.ascending(\.preview)]), "ChatMessage.preview is not stored (it is a computed property)"),
        (FetchRequest<ChatMessage>(where: \.isSelected == true), "ChatMessage.isSelected is not stored (it is marked @Transient)"),
        (FetchRequest<ChatMessage>(where: .always, sortBy: [.descending(\.isSelected)]), "ChatMessage.isSelected is not stored (it is marked @Transient)"),
    ])
    func unstoredProperties(request: FetchRequest<ChatMessage>, message: String) throws {
        let store = try Store.open("memory:")
        defer { store.close() }
        let error = #expect(throws: ReservoirError.self) { try store.fetch(request) }
        #expect(error?.code == .invalidQuery)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(#"the schema "chat_messages" can query id, channel, text, score, sent_at, replyTo"#) == true)
    }
}
