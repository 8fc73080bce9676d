import BenchSupport
import CLibPQ
import Foundation

/// The migration written by hand in SQL through libpq: `bench_notes(id bigint PRIMARY KEY,
/// title text, priority bigint)` in a schema of its own, and one transaction of
/// `ALTER TABLE … RENAME COLUMN`, `ALTER COLUMN priority TYPE text USING priority::text` (which
/// rewrites the table), `CREATE INDEX` and the version row.
enum RawPostgres {
    /// Runs `sql`; the text of the first column of each row.
    @discardableResult
    static func run(_ connection: OpaquePointer, _ sql: String) throws -> [String] {
        guard let result = PQexec(connection, sql) else { throw BenchError("raw libpq: out of memory") }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw BenchError("raw libpq: \(sql.prefix(80)): \(String(cString: PQresultErrorMessage(result)))")
        }
        return (0..<PQntuples(result)).map { String(cString: PQgetvalue(result, $0, 0)) }
    }

    static func withConnection<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        guard let postgresURL else { throw BenchError("raw libpq: no server (RESERVOIR_TEST_POSTGRES)") }
        let connection = try RawLibPQ.connect(postgresURL)
        defer { PQfinish(connection) }
        return try body(connection)
    }

    static func seed(_ place: Place, records: Int) throws {
        try withConnection { connection in
            let table = "\"\(place.schema)\".bench_notes"
            try run(connection, """
                CREATE SCHEMA "\(place.schema)";
                CREATE TABLE "\(place.schema)".schema_version (version bigint NOT NULL);
                INSERT INTO "\(place.schema)".schema_version VALUES (1);
                CREATE TABLE \(table) (id bigint PRIMARY KEY, title text, priority bigint);
                INSERT INTO \(table) SELECT i, 'note ' || i, i % 7 FROM generate_series(0, \(records - 1)) AS i
                """)
            try run(connection, "VACUUM ANALYZE \(table)")
        }
    }

    static func migrate(_ place: Place) throws {
        try withConnection { connection in
            let table = "\"\(place.schema)\".bench_notes"
            try run(connection, """
                BEGIN;
                ALTER TABLE \(table) RENAME COLUMN title TO name;
                ALTER TABLE \(table) ALTER COLUMN priority TYPE text USING priority::text;
                CREATE INDEX bench_notes_name ON \(table) (name);
                UPDATE "\(place.schema)".schema_version SET version = 2;
                COMMIT
                """)
        }
    }

    static func verify(_ place: Place, records: Int) throws {
        try withConnection { connection in
            let table = "\"\(place.schema)\".bench_notes"
            let checks = try run(connection, """
                SELECT (SELECT version FROM "\(place.schema)".schema_version)::text || ' '
                    || (SELECT count(*) FROM pg_indexes WHERE schemaname = '\(place.schema)' AND indexname = 'bench_notes_name')::text || ' '
                    || (SELECT count(*) FROM \(table))::text || ' '
                    || (SELECT count(*) FROM \(table) WHERE name <> 'note ' || id OR priority <> (id % 7)::text OR priority IS NULL)::text
                """)
            guard checks == ["2 1 \(records) 0"] else { throw BenchError("raw libpq: version, index, records, wrong records: \(checks)") }
        }
    }

    static func drop(schema: String, url: String) {
        guard let connection = try? RawLibPQ.connect(url) else { return }
        PQclear(PQexec(connection, "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"))
        PQfinish(connection)
    }

    static let side = Side(name: "raw-postgres", engine: "postgres", label: "hand-written SQL, libpq",
                           seed: { try seed($0, records: $1) }, migrate: { try migrate($0) }, verify: { try verify($0, records: $1) })
}
