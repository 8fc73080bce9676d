import CSQLite
import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirPostgres
import ReservoirSQLite
import Testing

/// A fresh temporary directory per store, removed after the run.
private func fileHarness(_ scheme: String, factory: BackendFactory, file: String, options: String = "") -> ConformanceHarness {
    .inTemporaryDirectories(registry: BackendRegistry([factory]), scheme: scheme, file: file, options: options)
}

/// A fresh schema on the test server (scripts/with-postgres starts one) per store, dropped after.
private let postgresHarness = ConformanceHarness(
    registry: BackendRegistry([.postgres]),
    freshConfiguration: {
        guard let url = ProcessInfo.processInfo.environment["RESERVOIR_TEST_POSTGRES"], !url.isEmpty else {
            throw ReservoirError(.cannotOpen, "RESERVOIR_TEST_POSTGRES is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL server (apt-get install postgresql), or point it at a server of yours")
        }
        let schema = "d_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        return url + (url.contains("?") ? "&" : "?") + "schema=\(schema)&retention=3"
    },
    cleanup: { try? PostgresBackend.dropStore($0) }
)

/// Every built-in backend. A new backend joins by adding one line here. Each keeps a short
/// history (`retention=3`), so trimming runs within a sequence and the history consumer's holds
/// (``DifferentialHistory``) are what keep the change sets it has yet to read.
let backends = [
    DifferentialBackend("memory:", harness: ConformanceHarness(registry: BackendRegistry()) { "memory:?retention=3" }),
    DifferentialBackend("sqlite:", harness: fileHarness("sqlite", factory: .sqlite, file: "db.sqlite", options: "?retention=3"), foreignWriter: PlainSQL.write),
    DifferentialBackend("lmdb:", harness: fileHarness("lmdb", factory: .lmdb, file: "env", options: "?retention=3")),
    // The smallest map LMDB allows, so runs grow it (and replay the growing write) often.
    DifferentialBackend("lmdb: small map", harness: fileHarness("lmdb", factory: .lmdb, file: "env", options: "?mapsize=64KiB&retention=3")),
    DifferentialBackend("postgres:", harness: postgresHarness),
]

@Suite("Differential: every backend against the model")
struct DifferentialTests {
    static let budget = DifferentialTest.budget(defaultSequences: 8, steps: 150)

    @Test(arguments: budget.map(\.seed))
    func randomSequences(seed: UInt64) throws {
        let steps = Self.budget.first { $0.seed == seed }?.steps ?? 150
        do {
            try DifferentialTest(backends: backends).run(seed: seed, steps: steps)
        } catch let failure as DifferentialFailure {
            Issue.record(Comment(rawValue: failure.description))
        }
    }
}

/// Replicas on every backend kept in step with one server under random interleavings of local
/// writes, the server's own, pushes, pulls, lost server writes and restarts (``SyncConvergenceTest``).
@Suite("Differential: replicas on every backend converge with one server")
struct SyncConvergenceTests {
    static let budget = DifferentialTest.budget(defaultSequences: 4, steps: 150)

    @Test(arguments: budget.map(\.seed))
    func replicasConverge(seed: UInt64) throws {
        let steps = Self.budget.first { $0.seed == seed }?.steps ?? 150
        do {
            try SyncConvergenceTest(backends: backends).run(seed: seed, steps: steps)
        } catch let failure as SyncConvergenceFailure {
            Issue.record(Comment(rawValue: failure.description))
        }
    }
}

/// Writes rows the way another program would: plain SQL on a connection of its own, an
/// upsert per row (so an existing row is updated, not deleted and inserted), then deletes.
enum PlainSQL {
    @Sendable static func write(_ configuration: StoreConfiguration, entity: String, put: [Row], delete: [Value]) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(configuration.location, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db = handle else {
            sqlite3_close(handle)
            throw PlainSQLError(message: "cannot open \(configuration.location)")
        }
        defer { sqlite3_close(db) }
        sqlite3_busy_timeout(db, 5000)
        try run(db, "BEGIN IMMEDIATE", [])
        do {
            for row in put {
                let columns = row.columns.map { "\"\($0)\"" }
                let updates = row.columns.filter { $0 != "id" }.map { "\"\($0)\" = excluded.\"\($0)\"" }
                let sql = "INSERT INTO \"\(entity)\"(\(columns.joined(separator: ", "))) VALUES(\(row.columns.indices.map { "?\($0 + 1)" }.joined(separator: ", "))) ON CONFLICT(\"id\") DO UPDATE SET \(updates.joined(separator: ", "))"
                try run(db, sql, Array(row.values))
            }
            for id in delete {
                try run(db, "DELETE FROM \"\(entity)\" WHERE \"id\" = ?1", [id])
            }
            try run(db, "COMMIT", [])
        } catch {
            sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    private static func run(_ db: OpaquePointer, _ sql: String, _ values: [Value]) throws {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw PlainSQLError(message: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            switch value {
            case .null: sqlite3_bind_null(statement, position)
            case let .integer(number): sqlite3_bind_int64(statement, position, number)
            case let .real(number): sqlite3_bind_double(statement, position, number)
            case let .text(text): sqlite3_bind_text(statement, position, text, Int32(text.utf8.count), transient)
            case let .blob(bytes): _ = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), transient) }
            }
        }
        guard sqlite3_step(statement) == SQLITE_DONE else {
            throw PlainSQLError(message: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }
}

struct PlainSQLError: Error, CustomStringConvertible {
    let message: String
    var description: String { "plain SQL: " + message }
}

@Suite("Query fuzzer: every backend against the reference evaluator")
struct QueryFuzzTests {
    static let budget = QueryFuzzer.budget(defaultSeeds: 4, queries: 400)

    @Test(arguments: backends.map(\.name), budget.map(\.seed))
    func randomQueries(backend name: String, seed: UInt64) throws {
        let backend = try #require(backends.first { $0.name == name })
        let queries = Self.budget.first { $0.seed == seed }?.queries ?? 400
        try QueryFuzzer(harness: backend.harness).run(seed: seed, queries: queries)
    }
}

@Suite("Concurrency stress: every backend")
struct ConcurrencyStressTests {
    @Test(arguments: backends.map(\.name))
    func writersReadersAndSubscribersAgreeAtQuiescence(backend name: String) async throws {
        let backend = try #require(backends.first { $0.name == name })
        let report = try await ConcurrencyStress(harness: backend.harness).run(seed: 7, writers: 3, writesPerThread: 200)
        print("concurrency stress, \(name): \(report)")
    }
}
