import Foundation
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import Testing

/// Seeds the query fuzzer once failed on, replayed on every run, and the failure each one
/// found, spelled out.
@Suite("Query fuzzer regressions: postgres:")
struct QueryFuzzRegressionTests {
    static let harness = ConformanceHarness(
        registry: TestServer.registry,
        freshConfiguration: { try TestServer.freshStore() },
        cleanup: { TestServer.drop($0) }
    )

    /// 1592590347: `ORDER BY id LIMIT 9` returned the id -12 as -12.0.
    @Test(arguments: [UInt64(1_592_590_347)])
    func seed(_ seed: UInt64) throws {
        try QueryFuzzer(harness: Self.harness).run(seed: seed, queries: 400)
    }

    /// An integer id written after real ones made the id column `double precision`, so it
    /// came back as a real: a second kind of id now makes the column mixed, as for fields.
    @Test func idsKeepTheirSpellingWhateverCameFirst() throws {
        let configuration = try TestServer.freshStore()
        defer { TestServer.drop(configuration) }
        let store = try Store.open(configuration, registry: TestServer.registry)
        defer { store.close() }
        let entity = EntityDescription(name: "spellings", idColumn: "id", fields: ["id", "a"])
        let ids: [Value] = [.real(2.5), .integer(-12), .real(3.5), .integer(7)]
        try store.write { tx in
            for (index, id) in ids.enumerated() { try tx.putRow(Row([("id", id), ("a", .integer(Int64(index)))]), in: entity) }
        }
        let query = try Query(entity: entity, sort: [SortTerm(column: "id", ascending: true)])
        let stored = try store.read { try $0.rows(query) }.map { $0.value("id") }
        let expected: [Value] = [.integer(-12), .real(2.5), .real(3.5), .integer(7)]
        #expect(stored.count == expected.count && zip(stored, expected).allSatisfy { $0.isIdentical(to: $1) }, "ids read back: \(stored)")
        let found = try store.backend.read { try $0.row(entity.name, id: .integer(-12)) }
        #expect(found.map { $0.value("id").isIdentical(to: .integer(-12)) } == true, "point read of -12: \(String(describing: found))")
    }
}
