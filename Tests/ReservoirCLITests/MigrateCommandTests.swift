import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite
import Testing

/// The to-do record as the tool stored it before schema version 2 (`due` an instant), written
/// here through the library since today's tool writes version 2.
private struct TodoV1: Storable {
    var id: UUID
    var title: String
    var done: Bool
    var priority: Int
    var created: Date
    var due: Date?

    static let schema = Schema<TodoV1>("todos", fields: [
        .field(\.id), .field(\.title), .field(\.done, indexed: true), .field(\.priority, indexed: true), .field(\.created), .field(\.due),
    ])
}

@Suite("reservoir migrate and the to-do store's versions")
struct MigrateCommandTests {
    static let registry = BackendRegistry([.sqlite, .lmdb])

    /// A to-do store as the tool before version 2 left it: three to-dos, never versioned, or
    /// stamped with version 1 when `stamped`.
    static func makeVersion1Store(_ configuration: String, in directory: URL, stamped: Bool) throws {
        let location = configuration.replacingOccurrences(of: "./", with: directory.path + "/")
        let store = stamped
            ? try Store.open(location, registry: registry, migrations: Migrations { SchemaVersion(1) })
            : try Store.open(location, registry: registry)
        defer { store.close() }
        let due = try #require(ISO8601DateFormatter().date(from: "2026-12-01T00:00:00Z"))
        try store.write { tx in
            try tx.insert(TodoV1(id: UUID(), title: "File taxes #home", done: false, priority: 3, created: Date(), due: due))
            try tx.insert(TodoV1(id: UUID(), title: "Buy milk #errands #Home", done: true, priority: 2, created: Date(), due: nil))
            try tx.insert(TodoV1(id: UUID(), title: "Fix the bike", done: false, priority: 1, created: Date(), due: nil))
        }
    }

    /// Every stored row of every record type, and the change log's sequence: what a dry run must leave alone.
    static func contents(_ configuration: String, in directory: URL) throws -> [String] {
        let location = configuration.replacingOccurrences(of: "./", with: directory.path + "/")
        let store = try Store.open(location, registry: registry)
        defer { store.close() }
        return try store.read { snapshot in
            try ["sequence \(snapshot.lastSequence())"] + snapshot.entities().flatMap { entity in
                try snapshot.rows(Query(entity: entity)).map { "\(entity.name): \($0)" }.sorted()
            }
        }
    }

    @Test("a dry run prints the plan and changes nothing; the real run migrates with progress; info shows the version",
          arguments: [("sqlite:./todos.sqlite", false), ("lmdb:./todos.lmdb", true)])
    func migrateOldStore(_ configuration: String, stamped: Bool) async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        try Self.makeVersion1Store(configuration, in: scratch.url, stamped: stamped)
        let store = ["--store", configuration]
        let before = try Self.contents(configuration, in: scratch.url)

        let dryRun = try await CLIProcess.run(["migrate", "--dry-run"] + store, in: scratch.url)
        #expect(dryRun.status == 0, "\(dryRun.errors)")
        let plan = [
            "schema version \(stamped ? 1 : 0) → 2:",
        ] + (stamped ? [] : ["  version 1: no steps (recorded only)"]) + [
            "  version 2: 3 steps",
            "    1. renameField \"due\" → \"dueDay\" in todos (3 records)",
            "    2. changeType \"dueDay\" in todos from Optional<Date> to Optional<String> (3 records)",
            "    3. addField \"tags\" to todos (computed) (3 records)",
            "dry run: nothing changed",
        ]
        #expect(dryRun.output.split(separator: "\n").map(String.init) == plan, "\(dryRun.output)")
        #expect(try Self.contents(configuration, in: scratch.url) == before, "the dry run changed the store")

        let run = try await CLIProcess.run(["migrate"] + store, in: scratch.url)
        #expect(run.status == 0, "\(run.errors)")
        for step in 1...3 {
            #expect(run.output.contains("version 2 step \(step)/3 (todos): 0/3 records\nversion 2 step \(step)/3 (todos): 3/3 records\n"), "plain progress lines when not on a terminal: \(run.output)")
        }
        #expect(run.output.hasSuffix("migrated \(configuration) from schema version \(stamped ? 1 : 0) to 2 (applied \(stamped ? "version 2" : "versions 1, 2"))\n"), "\(run.output)")

        let info = try await CLIProcess.run(["info"] + store, in: scratch.url)
        #expect(info.output.contains("schema:       version 2\n"), "\(info.output)")
        let listed = try await CLIProcess.run(["todo", "list", "--json"] + store, in: scratch.url)
        let todos = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]], "\(listed.output) \(listed.errors)")
        #expect(todos.map { $0["title"] as? String } == ["File taxes #home", "Buy milk #errands #Home", "Fix the bike"])
        #expect(todos.map { $0["due"] as? String } == ["2026-12-01", nil, nil], "the instant became its day")
        #expect(todos.map { $0["tags"] as? [String] } == [["home"], ["errands", "home"], []], "tags computed from the titles")

        let again = try await CLIProcess.run(["migrate", "--dry-run"] + store, in: scratch.url)
        #expect(again.output == "\(configuration): at schema version 2, the newest this tool knows is 2: nothing to do\n", "\(again.output)")
    }

    @Test("the todo commands migrate an old store on open and keep working")
    func todoMigratesOnOpen() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        try Self.makeVersion1Store("sqlite:./todos.sqlite", in: scratch.url, stamped: false)
        let store = ["--store", "sqlite:./todos.sqlite"]
        let listed = try await CLIProcess.run(["todo", "list", "--tag", "home"] + store, in: scratch.url)
        #expect(listed.status == 0, "\(listed.errors)")
        #expect(listed.output.split(separator: "\n").count == 2 && listed.output.contains("File taxes #home  due 2026-12-01") && listed.output.contains("Buy milk"), "\(listed.output)")
        let added = try await CLIProcess.run(["todo", "add", "Call the bank #home", "--due", "2026-12-02T09:30"] + store, in: scratch.url)
        #expect(added.status == 0, "\(added.errors)")
        let all = try await CLIProcess.run(["todo", "list", "--sort", "due", "--open"] + store, in: scratch.url)
        #expect(all.output.split(separator: "\n").map { String($0.dropFirst(14)) } == ["p1  Fix the bike", "p3  File taxes #home  due 2026-12-01", "p0  Call the bank #home  due 2026-12-02"], "\(all.output)")
        let info = try await CLIProcess.run(["info"] + store, in: scratch.url)
        #expect(info.output.contains("schema:       version 2\n"), "\(info.output)")
    }

    @Test("a missing store, another app's store and a store at a version the tool does not know are one-line errors")
    func badInput() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        func expectFailure(_ arguments: [String], _ expected: String) async throws {
            let result = try await CLIProcess.run(arguments, in: scratch.url)
            #expect(result.status != 0, "\(arguments)")
            #expect(result.errors.contains(expected), "\(arguments): \(result.errors)")
            #expect(result.errors.split(separator: "\n").count == 1, "one line: \(result.errors)")
            #expect(result.output.isEmpty, "\(arguments): nothing on stdout: \(result.output)")
        }
        try await expectFailure(["migrate", "--store", "sqlite:./missing.sqlite"],
                                "no store at sqlite:./missing.sqlite: \"./missing.sqlite\" does not exist; expected an existing to-do store")
        #expect(!FileManager.default.fileExists(atPath: scratch.url.appendingPathComponent("missing.sqlite").path), "nothing was made")
        try await expectFailure(["migrate", "--dry-run", "--store", "lmdb:./missing.lmdb"], "no store at lmdb:./missing.lmdb")
        try await expectFailure(["migrate", "--store", "redis://db"], "unknown scheme \"redis:\"")

        let other = try Store.open("sqlite:" + scratch.url.appendingPathComponent("notes.sqlite").path, registry: Self.registry)
        try await other.write { try $0.insert(TodoV1.Note(id: 1, text: "not a to-do")) }
        other.close()
        try await expectFailure(["migrate", "--store", "sqlite:./notes.sqlite"],
                                "sqlite:./notes.sqlite is not a to-do store: it has no schema version and no record type \"todos\" (record types: notes); expected a store made by reservoir todo")

        // A store a newer tool took to a version 3 that is not additive.
        let added = try await CLIProcess.run(["todo", "add", "written at version 2", "--store", "sqlite:./newer.sqlite"], in: scratch.url)
        try #require(added.status == 0, "\(added.errors)")
        try plainSQL(scratch.url.appendingPathComponent("newer.sqlite").path,
                     "INSERT INTO reservoir_schema_versions(version, additive, steps) VALUES (3, 0, 'dropField \"title\" from todos')")
        for command in [["migrate", "--dry-run"], ["migrate"], ["todo", "list"]] {
            try await expectFailure(command + ["--store", "sqlite:./newer.sqlite"],
                                    "the store is at schema version 3, but this app knows versions up to 2; version 3 is not additive (dropField \"title\" from todos)")
        }
    }
}

extension TodoV1 {
    /// Another app's record, in a store that holds no to-dos.
    struct Note: Storable {
        var id: Int
        var text: String
        static let schema = Schema<Note>("notes", fields: [.field(\.id), .field(\.text)])
    }
}
