import BenchSupport
import CLibPQ
import Foundation

/// The PostgreSQL server the PostgreSQL columns run on: `RESERVOIR_BENCH_POSTGRES` (or the
/// `RESERVOIR_TEST_POSTGRES` that `scripts/with-postgres` sets, as `Benchmarks/run` does), a
/// `postgres://` URI. Each Reservoir store gets a schema of its own, dropped when it closes.
final class BenchPostgres: @unchecked Sendable {
    // @unchecked: the table runs its rows on the main thread only, which alone uses this.
    static let shared = BenchPostgres()

    let url: String?
    private var admin: OpaquePointer?
    private var schemas = 0

    private init() {
        let environment = ProcessInfo.processInfo.environment
        url = environment["RESERVOIR_BENCH_POSTGRES"] ?? environment["RESERVOIR_TEST_POSTGRES"]
    }

    var isAvailable: Bool { url != nil }

    /// A connection for set-up and clean-up, opened once.
    func connection() throws -> OpaquePointer {
        if let admin { return admin }
        guard let url else { throw BenchError("no PostgreSQL server: set RESERVOIR_BENCH_POSTGRES") }
        let connection = try RawLibPQ.connect(url)
        admin = connection
        return connection
    }

    /// A schema name no store of this run has used.
    func freshSchema() throws -> String {
        schemas += 1
        return "bench_\(getpid())_\(schemas)"
    }

    /// The configuration string of a store in `schema`.
    func configuration(schema: String) throws -> String {
        guard let url else { throw BenchError("no PostgreSQL server: set RESERVOIR_BENCH_POSTGRES") }
        return url + (url.contains("?") ? "&" : "?") + "schema=" + schema
    }

    func drop(schema: String) {
        guard let connection = try? connection() else { return }
        PQclear(PQexec(connection, "DROP SCHEMA IF EXISTS \(schema) CASCADE"))
    }

    /// "PostgreSQL 15.x" and the settings that matter here, for the lines under the table.
    func serverDescription() -> String? {
        guard isAvailable, let connection = try? connection() else { return nil }
        func setting(_ name: String) -> String {
            guard let result = PQexec(connection, "SHOW \(name)") else { return "?" }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1 else { return "?" }
            return String(cString: PQgetvalue(result, 0, 0))
        }
        return "PostgreSQL \(setting("server_version")) on loopback TCP, fsync=\(setting("fsync")), synchronous_commit=\(setting("synchronous_commit"))"
    }
}

/// libpq as a careful C program uses it: one connection, prepared statements with binary
/// parameters and results, binary `COPY` for the bulk load, autocommit for single
/// statements, and pipeline mode (one round trip) for the many updates of one transaction.
/// The table has the records' columns as typed columns, text in the "C" collation (byte
/// order, the library's), the group indexed.
final class RawLibpqSide: BenchSide {
    let column = TableColumn.rawLibpq
    /// Group reads keep each group's records in an array (``GroupSink``).
    var collectsGroups = false
    private var conn: OpaquePointer?
    private var prepared: Set<String> = []

    private func failure(_ what: String) -> BenchError {
        BenchError("raw libpq: \(what): \(conn.map { String(cString: PQerrorMessage($0)) } ?? "not connected")")
    }

    /// Clears `result`, throwing unless its status is one of `expected`.
    private func check(_ result: OpaquePointer?, _ what: String, _ expected: [ExecStatusType] = [PGRES_COMMAND_OK, PGRES_TUPLES_OK]) throws {
        defer { PQclear(result) }
        guard let result, expected.contains(PQresultStatus(result)) else { throw failure(what) }
    }

    private func exec(_ sql: String) throws {
        try check(PQexec(conn, sql), sql)
    }

    func reset() throws {
        if conn == nil {
            guard let url = BenchPostgres.shared.url else { throw BenchError("no PostgreSQL server") }
            conn = try RawLibPQ.connect(url)
        }
        try exec("DEALLOCATE ALL")
        prepared = []
        try exec("DROP SCHEMA IF EXISTS raw_bench CASCADE")
        try exec("CREATE SCHEMA raw_bench")
        try exec("CREATE TABLE raw_bench.items (id bigint PRIMARY KEY, name text COLLATE \"C\" NOT NULL, score double precision NOT NULL, rank bigint NOT NULL, grp bigint NOT NULL)")
        try exec("CREATE INDEX ON raw_bench.items (grp)")
    }

    /// Prepares `sql` under `name` once per table.
    private func prepare(_ name: String, _ sql: String, parameters: Int) throws {
        if prepared.contains(name) { return }
        let types = [Oid](repeating: 20, count: parameters)  // int8
        try check(PQprepare(conn, name, sql, Int32(parameters), types), "prepare \(name)")
        prepared.insert(name)
    }

    // MARK: - Binary values

    private static func appendInt64(_ value: Int, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: Int64(value).bigEndian) { buffer.append(contentsOf: $0) }
    }

    private static func int64(_ result: OpaquePointer, _ row: Int32, _ column: Int32) -> Int {
        Int(Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, column)).loadUnaligned(as: Int64.self)))
    }

    private static func record(_ result: OpaquePointer, _ row: Int32) -> BenchRecord {
        let name = String(decoding: UnsafeRawBufferPointer(start: PQgetvalue(result, row, 1), count: Int(PQgetlength(result, row, 1))), as: UTF8.self)
        let score = Double(bitPattern: UInt64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 2)).loadUnaligned(as: UInt64.self)))
        return BenchRecord(id: int64(result, row, 0), name: name, score: score, rank: int64(result, row, 3), group: int64(result, row, 4))
    }

    /// Runs the prepared statement `name` with int8 parameters, binary results.
    private func execute(_ name: String, _ values: [Int]) -> OpaquePointer? {
        var bytes = values.map { Int64($0).bigEndian }
        return bytes.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) }
            let pointers: [UnsafePointer<CChar>?] = (0..<values.count).map { index in base.map { $0 + index * 8 } }
            let lengths = [Int32](repeating: 8, count: values.count)
            let formats = [Int32](repeating: 1, count: values.count)
            return PQexecPrepared(conn, name, Int32(values.count), pointers, lengths, formats, 1)
        }
    }

    // MARK: - Workloads

    func insert(_ records: ArraySlice<BenchRecord>) throws {
        try exec("BEGIN")
        try check(PQexec(conn, "COPY raw_bench.items (id, name, score, rank, grp) FROM STDIN (FORMAT binary)"), "COPY", [PGRES_COPY_IN])
        // The binary COPY header: signature, flags, header extension length.
        var buffer: [UInt8] = [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8)
        buffer.reserveCapacity(1 << 17)
        func flush() throws {
            let sent = buffer.withUnsafeBytes { PQputCopyData(conn, $0.baseAddress?.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
            guard sent == 1 else { throw failure("COPY data") }
            buffer.removeAll(keepingCapacity: true)
        }
        for record in records {
            buffer.append(contentsOf: [0, 5])
            buffer.append(contentsOf: [0, 0, 0, 8]); Self.appendInt64(record.id, to: &buffer)
            var name = record.name
            name.withUTF8 { utf8 in
                withUnsafeBytes(of: Int32(utf8.count).bigEndian) { buffer.append(contentsOf: $0) }
                buffer.append(contentsOf: utf8)
            }
            buffer.append(contentsOf: [0, 0, 0, 8]); withUnsafeBytes(of: record.score.bitPattern.bigEndian) { buffer.append(contentsOf: $0) }
            buffer.append(contentsOf: [0, 0, 0, 8]); Self.appendInt64(record.rank, to: &buffer)
            buffer.append(contentsOf: [0, 0, 0, 8]); Self.appendInt64(record.group, to: &buffer)
            if buffer.count >= 1 << 16 { try flush() }
        }
        buffer.append(contentsOf: [0xFF, 0xFF])
        try flush()
        guard PQputCopyEnd(conn, nil) == 1 else { throw failure("COPY end") }
        try check(PQgetResult(conn), "COPY result")
        while let extra = PQgetResult(conn) { PQclear(extra) }
        try exec("COMMIT")
    }

    func fetchSorted() throws -> [Int] {
        try prepare("sorted", "SELECT id, name, score, rank, grp FROM raw_bench.items ORDER BY rank, name", parameters: 0)
        guard let result = execute("sorted", []), PQresultStatus(result) == PGRES_TUPLES_OK else { throw failure("sorted fetch") }
        defer { PQclear(result) }
        let count = PQntuples(result)
        var records: [BenchRecord] = []
        records.reserveCapacity(Int(count))
        for row in 0..<count { records.append(Self.record(result, row)) }
        return records.map(\.id)
    }

    func pointReads(_ ids: [Int]) throws -> Int {
        try prepare("get", "SELECT id, name, score, rank, grp FROM raw_bench.items WHERE id = $1", parameters: 1)
        var checksum = 0
        for id in ids {
            guard let result = execute("get", [id]), PQresultStatus(result) == PGRES_TUPLES_OK else { throw failure("point read") }
            if PQntuples(result) == 1 { checksum &+= Self.record(result, 0).rank }
            PQclear(result)
        }
        return checksum
    }

    func groupReads(_ groups: [Int]) throws -> Int {
        try prepare("group", "SELECT id, name, score, rank, grp FROM raw_bench.items WHERE grp = $1 ORDER BY id", parameters: 1)
        var sink = GroupSink(collects: collectsGroups)
        for group in groups {
            guard let result = execute("group", [group]), PQresultStatus(result) == PGRES_TUPLES_OK else { throw failure("group read") }
            for row in 0..<PQntuples(result) {
                sink.take(Self.record(result, row))
            }
            PQclear(result)
            sink.endGroup()
        }
        return sink.checksum
    }

    private static let updateSQL = "UPDATE raw_bench.items SET name = $2, score = $3, rank = $4, grp = $5 WHERE id = $1"

    private func prepareUpdate() throws {
        if prepared.contains("update") { return }
        let types: [Oid] = [20, 25, 701, 20, 20]  // int8, text, float8, int8, int8
        try check(PQprepare(conn, "update", Self.updateSQL, 5, types), "prepare update")
        prepared.insert("update")
    }

    /// Sends the prepared update of `record` (binary parameters): run it when `pipelined` is
    /// false, or queue it in the pipeline.
    private func sendUpdate(_ record: BenchRecord, pipelined: Bool) throws {
        var fixed = [Int64(record.id).bigEndian, Int64(bitPattern: record.score.bitPattern.bigEndian),
                     Int64(record.rank).bigEndian, Int64(record.group).bigEndian]
        var name = record.name
        let outcome: OpaquePointer?? = name.withUTF8 { utf8 in
            fixed.withUnsafeMutableBytes { raw in
                let base = raw.baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) }
                let text = utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
                let values: [UnsafePointer<CChar>?] = [base, text, base.map { $0 + 8 }, base.map { $0 + 16 }, base.map { $0 + 24 }]
                let lengths: [Int32] = [8, Int32(utf8.count), 8, 8, 8]
                let formats: [Int32] = [1, 1, 1, 1, 1]
                if pipelined {
                    return PQsendQueryPrepared(conn, "update", 5, values, lengths, formats, 1) == 1 ? .some(nil) : nil
                }
                return .some(PQexecPrepared(conn, "update", 5, values, lengths, formats, 1))
            }
        }
        guard let result = outcome else { throw failure("send update") }
        if !pipelined { try check(result, "update") }
    }

    func commitEach(_ records: [BenchRecord]) throws {
        try prepareUpdate()
        for record in records { try sendUpdate(record, pipelined: false) }
    }

    /// BEGIN, the updates and COMMIT in one pipeline: one round trip.
    func updateAll(_ records: [BenchRecord]) throws {
        try prepareUpdate()
        guard PQenterPipelineMode(conn) == 1 else { throw failure("enter pipeline mode") }
        defer { PQexitPipelineMode(conn) }
        guard PQsendQueryParams(conn, "BEGIN", 0, nil, nil, nil, nil, 0) == 1 else { throw failure("send BEGIN") }
        for record in records { try sendUpdate(record, pipelined: true) }
        guard PQsendQueryParams(conn, "COMMIT", 0, nil, nil, nil, nil, 0) == 1, PQpipelineSync(conn) == 1 else { throw failure("send COMMIT") }
        // Each statement's result, then the NULL that ends it; then the sync.
        for statement in 0..<(records.count + 2) {
            try check(PQgetResult(conn), statement == 0 ? "BEGIN" : statement == records.count + 1 ? "COMMIT" : "update")
            guard PQgetResult(conn) == nil else { throw failure("pipeline: more than one result") }
        }
        try check(PQgetResult(conn), "pipeline sync", [PGRES_PIPELINE_SYNC])
    }

    func close() {
        if let conn {
            PQclear(PQexec(conn, "DROP SCHEMA IF EXISTS raw_bench CASCADE"))
            PQfinish(conn)
        }
        conn = nil
    }

    deinit { close() }
}
