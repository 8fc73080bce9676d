import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// The read's short cuts: a read transaction's first statement, and `Store.get`'s `SELECT`, are
/// built from the catalog the store last knew and prepared before the transaction begins.
@Suite("PostgreSQL: the read path")
struct ReadPathTests {
    static let things = EntityDescription(name: "things", idColumn: "id", fields: ["id", "name"])

    static func thing(_ id: Value, _ name: Value) -> Row {
        Row([("id", id), ("name", name)])
    }

    static func ids(_ rows: [Row]) -> [Value] {
        rows.map { $0.value("id") }
    }

    /// Another client made a column mixed (`bytea`) since this store last loaded its catalog: a
    /// first statement built from the old catalog no longer prepares against the table
    /// (`starts_with(bytea, text)`, `bytea = bigint`). The read begins without it and builds it
    /// anew from its snapshot's catalog, rather than failing (a live fetch's re-fetch failing
    /// this way ended its subscription with old results: differential seed 0x5EED0003).
    @Test func aFirstStatementTheTableNoLongerFitsIsBuiltAnew() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        // The backend alone: no poller that would load the new catalog first.
        let mine = try PostgresBackend(StoreConfiguration(configuration))
        defer { mine.close() }
        let other = try Store.open(configuration, registry: TestServer.registry)
        defer { other.close() }
        try other.write {
            _ = try $0.putRow(Self.thing(.integer(1), .text("bee")), in: Self.things)
            _ = try $0.putRow(Self.thing(.integer(2), .text("ant")), in: Self.things)
        }
        // A read leaves its connection in the pool, its statements prepared for this catalog,
        // the next read's not among them.
        #expect(try mine.read { try $0.count(Query(entity: Self.things)) } == 2)
        // The name column made mixed: a fetch's first statement, `starts_with(name, 'b')`.
        try other.write { _ = try $0.putRow(Self.thing(.integer(3), .integer(33)), in: Self.things) }
        let prefixed = try Query(entity: Self.things, predicate: .hasPrefix(column: "name", "b"))
        #expect(Self.ids(try mine.read { try $0.fetch(prefixed) }) == [.integer(1)])

        #expect(try mine.read { try $0.count(Query(entity: Self.things)) } == 3)
        // The id column made mixed: Store.get's `SELECT … WHERE id = $1::bigint`.
        try other.write { _ = try $0.putRow(Self.thing(.text("four"), .text("four")), in: Self.things) }
        #expect(try mine.row("things", id: .integer(2))?.value("name") == .text("ant"))
        #expect(try mine.row("things", id: .text("four"))?.value("name") == .text("four"))
        #expect(Self.ids(try mine.read { try $0.fetch(prefixed) }) == [.integer(1)])
    }
}
