import Foundation
import Reservoir
import ReservoirPostgres
import ReservoirTestRecords
import Testing

/// Each mistake a user makes with a server is a clear error naming the server and the cause,
/// and never shows the password.
@Suite("PostgreSQL: bad input")
struct PostgresBadInputTests {
    /// The test server's URL with its authority and path replaced.
    static func server(user: String? = nil, password: String? = nil, database: String? = nil, port: Int? = nil) throws -> String {
        let base = try TestServer.url()
        var components = try #require(URLComponents(string: base))
        if let user { components.user = user }
        if let password { components.password = password }
        if let database { components.path = "/" + database }
        if let port { components.port = port }
        return try #require(components.string)
    }

    static func openError(_ configuration: String) throws -> ReservoirError {
        try #require(throws: ReservoirError.self) { _ = try Store.open(configuration, registry: TestServer.registry) }
    }

    @Test func noServerListening() throws {
        let error = try Self.openError(try Self.server(password: "hunter2", port: 1))
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains("no PostgreSQL server is listening"), "\(error.message)")
        #expect(error.message.contains("127.0.0.1:1") || error.message.contains("port 1"), "\(error.message)")
        #expect(!error.description.contains("hunter2"), "the password leaked: \(error.description)")
    }

    @Test func missingDatabaseAndUnknownRole() throws {
        let database = try Self.openError(try Self.server(database: "no_such_database"))
        #expect(database.code == .cannotOpen)
        #expect(database.message.contains("database does not exist") && database.message.contains("no_such_database"), "\(database.message)")
        let role = try Self.openError(try Self.server(user: "no_such_role"))
        #expect(role.code == .cannotOpen)
        #expect(role.message.contains("no such user") && role.message.contains("no_such_role"), "\(role.message)")
    }

    @Test func badOptions() throws {
        let base = try TestServer.url()
        let schema = try Self.openError(base + "?schema=1bad")
        #expect(schema.code == .invalidConfiguration && schema.message.contains("schema=1bad"), "\(schema.message)")
        let retention = try Self.openError(base + "?retention=-1")
        #expect(retention.code == .invalidConfiguration && retention.message.contains("retention"), "\(retention.message)")
        let unknown = try Self.openError(base + "?colour=blue")
        #expect(unknown.code == .invalidConfiguration && unknown.message.contains("colour"), "\(unknown.message)")
    }

    @Test func aRoleWithoutPermissionToCreateTables() throws {
        let role = "reader_" + UUID().uuidString.lowercased().prefix(8)
        try PlainSQLTests.psql("CREATE ROLE \(role) LOGIN")  // no CREATE on the database (PostgreSQL 15's default)
        defer { try? PlainSQLTests.psql("DROP ROLE \(role)") }
        // The store is created by its first write (so a refused one leaves nothing behind).
        let store = try Store.open(try Self.server(user: role) + "?schema=s_\(role)", registry: TestServer.registry)
        defer { store.close() }
        let error = try #require(throws: ReservoirError.self) { try store.write { try $0.insert(Message(id: 1, author: 1, body: "x")) } }
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains("refused permission"), "\(error.message)")
    }
}
