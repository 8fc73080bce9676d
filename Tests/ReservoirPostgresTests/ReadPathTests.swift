import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// The read's short cuts: a read transaction's first statement, and `Store.get`'s and
/// `Store.fetch`'s `SELECT`, are built from the catalog the store last knew and prepared before
/// the transaction begins.
@Suite("PostgreSQL: the read path")
struct ReadPathTests {
    static let things = EntityDescription(name: "things", idColumn: "id", fields: ["id", "name"])

    static func thing(_ id: Value, _ name: Value) -> Row {
        Row([("id", id), ("name", name)])
    }

    static func ids(_ rows: [Row]) -> [Value] {
        rows.map { $0.value("id") }
    }

    /// Calls `body` with a fresh store's backend alone (no poller that would load another
    /// client's catalog first) and another client's store on the same schema.
    static func withStores(_ body: (PostgresBackend, Store) throws -> Void) throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let mine = try PostgresBackend(StoreConfiguration(configuration))
        defer { mine.close() }
        let other = try Store.open(configuration, registry: TestServer.registry)
        defer { other.close() }
        try body(mine, other)
    }

    /// Another client made a column mixed (`bytea`) since this store last loaded its catalog: a
    /// first statement built from the old catalog no longer prepares against the table
    /// (`starts_with(bytea, text)`, `bytea = bigint`). The read begins without it and builds it
    /// anew from its snapshot's catalog, rather than failing (a live fetch's re-fetch failing
    /// this way ended its subscription with old results: differential seed 0x5EED0003).
    @Test func aFirstStatementTheTableNoLongerFitsIsBuiltAnew() throws {
        try Self.withStores { mine, other in
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

    /// `Store.fetch`'s read alone (`StorageBackend.fetch(_:expecting:each:)`, and `count(_:)`), one segment with
    /// its start and end: it sees every commit before it, falls back to the ordinary read when
    /// the table changed under the catalog it knew, announces the count it then delivers, and
    /// leaves no transaction or lock behind (a write and a column rewrite that takes the
    /// readers' lock exclusively still run after it).
    @Test func aFetchAloneSeesEachCommitAndFallsBackWhenTheTableChanged() throws {
        try Self.withStores { mine, other in
            func alone(_ query: Query) throws -> [Value] {
                var announced: Int?
                var rows: [Row] = []
                try mine.fetch(query, expecting: { announced = $0 }, each: { rows.append($0) })
                #expect(announced == nil || announced == rows.count)
                return Self.ids(rows)
            }
            let prefixed = try Query(entity: Self.things, predicate: .hasPrefix(column: "name", "b"), sort: [SortTerm(column: "id", ascending: false)])
            // Before the store exists: nothing, through the ordinary read.
            #expect(try alone(prefixed) == [])
            try other.write {
                _ = try $0.putRow(Self.thing(.integer(1), .text("bee")), in: Self.things)
                _ = try $0.putRow(Self.thing(.integer(2), .text("ant")), in: Self.things)
            }
            #expect(try alone(prefixed) == [.integer(1)])
            // Another commit, the catalog the same: the next fetch alone sees it.
            try other.write { _ = try $0.putRow(Self.thing(.integer(5), .text("bat")), in: Self.things) }
            #expect(try alone(prefixed) == [.integer(5), .integer(1)])
            #expect(try mine.count(prefixed) == 2)
            // The name column made mixed, a rewrite that takes the readers' lock exclusively (it
            // would wait out its timeout behind a lock left held): the statement built from the
            // old catalog no longer fits.
            try other.write { _ = try $0.putRow(Self.thing(.integer(3), .integer(33)), in: Self.things) }
            #expect(try alone(prefixed) == [.integer(5), .integer(1)])
            #expect(try alone(Query(entity: Self.things)) == [.integer(1), .integer(2), .integer(3), .integer(5)])
            try other.write { _ = try $0.putRow(Self.thing(.integer(6), .text("bun")), in: Self.things) }
            #expect(try alone(prefixed) == [.integer(6), .integer(5), .integer(1)])
            try other.write { _ = try $0.deleteRow(id: .integer(3), in: Self.things) }
            #expect(try alone(Query(entity: Self.things)) == [.integer(1), .integer(2), .integer(5), .integer(6)])
            // Another client added a column: the statement built from the catalog this store knew
            // still prepares, but the meta row names a newer catalog, so the read is made again
            // under it and the new column is read.
            let sized = EntityDescription(name: "things", idColumn: "id", fields: ["id", "name", "size"])
            try other.write { _ = try $0.putRow(Row([("id", .integer(7)), ("name", .text("bug")), ("size", .integer(70))]), in: sized) }
            var rows: [Row] = []
            try mine.fetch(prefixed, expecting: { _ in }, each: { rows.append($0) })
            #expect(rows.map { $0.value("size") } == [.integer(70), .null, .null, .null])
            #expect(try mine.count(Query(entity: Self.things, predicate: .compare(column: "size", .equal, .integer(70)))) == 1)
        }
    }
}
