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

    /// The same migration with the conversion done in the client, the fastest way found with
    /// libpq alone: the ids and priorities read through a binary cursor, 10,000 rows a `FETCH`,
    /// each priority converted in Swift (`String(_:)`) and streamed back with a binary
    /// `COPY … FROM STDIN` into a temporary table, then `ALTER COLUMN priority TYPE text USING
    /// NULL` and one `UPDATE … FROM` the staged values. The client holds one batch at a time.
    static func migrateRowByRow(_ place: Place) throws {
        try withConnection { connection in
            let table = "\"\(place.schema)\".bench_notes"
            try run(connection, """
                BEGIN;
                ALTER TABLE \(table) RENAME COLUMN title TO name;
                CREATE TEMP TABLE stage (id bigint, priority text) ON COMMIT DROP;
                DECLARE notes BINARY CURSOR FOR SELECT id, priority FROM \(table)
                """)
            var buffer: [UInt8] = []
            while true {
                guard let batch = PQexec(connection, "FETCH 10000 FROM notes") else { throw BenchError("raw libpq: out of memory") }
                defer { PQclear(batch) }
                guard PQresultStatus(batch) == PGRES_TUPLES_OK else {
                    throw BenchError("raw libpq: fetch: \(String(cString: PQresultErrorMessage(batch)))")
                }
                let rows = PQntuples(batch)
                if rows == 0 { break }
                buffer.removeAll(keepingCapacity: true)
                buffer.append(contentsOf: Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8))
                for row in 0..<rows {
                    func int64(_ column: Int32) -> Int64 {
                        var value: Int64 = 0
                        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(start: PQgetvalue(batch, row, column), count: 8)) }
                        return Int64(bigEndian: value)
                    }
                    let id = int64(0)
                    var converted = String(int64(1))
                    withUnsafeBytes(of: Int16(2).bigEndian) { buffer.append(contentsOf: $0) }
                    withUnsafeBytes(of: Int32(8).bigEndian) { buffer.append(contentsOf: $0) }
                    withUnsafeBytes(of: id.bigEndian) { buffer.append(contentsOf: $0) }
                    converted.withUTF8 { text in
                        withUnsafeBytes(of: Int32(text.count).bigEndian) { buffer.append(contentsOf: $0) }
                        buffer.append(contentsOf: text)
                    }
                }
                withUnsafeBytes(of: Int16(-1).bigEndian) { buffer.append(contentsOf: $0) }
                try copyIn(connection, "COPY stage (id, priority) FROM STDIN (FORMAT binary)", buffer)
            }
            try run(connection, """
                CLOSE notes;
                ANALYZE stage;
                ALTER TABLE \(table) ALTER COLUMN priority TYPE text USING NULL::text;
                UPDATE \(table) AS t SET priority = s.priority FROM stage AS s WHERE t.id = s.id;
                CREATE INDEX bench_notes_name ON \(table) (name);
                UPDATE "\(place.schema)".schema_version SET version = 2;
                COMMIT
                """)
        }
    }

    /// Runs `command` (a `COPY … FROM STDIN`) with `data` as its whole input.
    static func copyIn(_ connection: OpaquePointer, _ command: String, _ data: [UInt8]) throws {
        guard let start = PQexec(connection, command) else { throw BenchError("raw libpq: out of memory") }
        let status = PQresultStatus(start)
        PQclear(start)
        guard status == PGRES_COPY_IN else { throw BenchError("raw libpq: \(command): \(String(cString: PQerrorMessage(connection)))") }
        let sent = data.withUnsafeBytes { PQputCopyData(connection, $0.baseAddress?.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
        guard sent == 1, PQputCopyEnd(connection, nil) == 1 else { throw BenchError("raw libpq: copy: \(String(cString: PQerrorMessage(connection)))") }
        while let result = PQgetResult(connection) {
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else {
                throw BenchError("raw libpq: copy: \(String(cString: PQresultErrorMessage(result)))")
            }
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
    static let rowLoopSide = Side(name: "raw-postgres-rows", engine: "postgres", label: "libpq, transform per row in the client",
                                  seed: { try seed($0, records: $1) }, migrate: { try migrateRowByRow($0) }, verify: { try verify($0, records: $1) })
}
