import CLibPQ
import Foundation
import Reservoir

/// One libpq connection (`PGconn`), used by one thread at a time (the owner's lock or the
/// reader pool sees to that).
///
/// Statements with parameters are prepared once per connection and run with binary
/// parameters and, for data, binary results: exact for every value (no float printing),
/// and no text parsing. Every failed call becomes a ``ReservoirError`` naming the server
/// and carrying PostgreSQL's SQLSTATE (as the native code, see ``PGFailure``) and message.
final class PGConnection {
    let handle: OpaquePointer
    /// The store, for messages: `PostgreSQL store "postgres://user@host:port/db" (schema s)`.
    let name: String
    private var prepared: [String: String] = [:]
    /// The last statements named, looked through before `prepared`: a run of commits sends
    /// the same few texts (the very strings the connection keeps, ``text(_:catalog:)``), which compare
    /// equal by their representation at once, where the dictionary hashes the whole text.
    private var recentNames: [(sql: String, name: String)] = []
    /// The catalog version the prepared statements were made under; a schema change
    /// (another process's, or this connection's own DDL) drops them.
    var preparedCatalog: Int64 = -1
    /// SQL texts made for the tables of catalog version `textsCatalog` (an upsert of one row
    /// shape, a read by id), kept across transactions: a run of single-record commits would
    /// otherwise spell the same statements again in every one (see ``PGReadTransaction``).
    private var texts: [StatementKey: String] = [:]
    private var textsCatalog: Int64 = -1

    static let textLimit = 1024

    /// The last query shape's text looked up (``PGQueryShape``): a run of reads of one shape
    /// compares it and hashes nothing.
    private var lastQueryText: (key: StatementKey, sql: String)?

    /// The SQL kept for `key` on the tables of catalog version `catalog`.
    func text(_ key: StatementKey, catalog: Int64) -> String? {
        guard textsCatalog == catalog else { return nil }
        guard case .query = key.kind else { return texts[key] }
        if let last = lastQueryText, last.key == key { return last.sql }
        guard let sql = texts[key] else { return nil }
        lastQueryText = (key, sql)
        return sql
    }

    /// Keeps `sql`, made for `key` on the tables of committed catalog version `catalog`.
    func keep(_ sql: String, for key: StatementKey, catalog: Int64) {
        // Bounded: an app whose queries take ever new shapes starts over now and then.
        if textsCatalog != catalog || texts.count >= Self.textLimit {
            texts.removeAll()
            lastQueryText = nil
            textsCatalog = catalog
        }
        texts[key] = sql
        if case .query = key.kind { lastQueryText = (key, sql) }
    }
    /// Writes whose results nobody waits for, sent together (``flush(then:)``) before the
    /// next statement that reads, so a transaction still reads its own writes.
    var queued: [(sql: String, parameters: [PGParameter])] = []
    /// Statements sent whose answers are still to be read (``pipeline(_:deferring:)``): a
    /// statement's SQL, or nil for a sync. While any are, the connection is in pipeline mode.
    var deferred: [String?] = []
    /// The `COPY … FROM STDIN (FORMAT binary)` rows are streamed into, while one is open.
    var copyCommand: String?
    let copyBuffer = CopyBuffer()

    /// Seconds one call waits for the server (``PostgresOptions/timeout``).
    let timeout: Int
    /// Set when a call timed out: the connection's state is unknown, so it is never used again.
    var broken = false

    /// Connects to `server` without blocking past its connect timeout: libpq's nonblocking
    /// connect, polled with a deadline (libpq applies `connect_timeout` only to its blocking
    /// connect). Options libpq rejects before contacting anyone (a malformed port, an unknown
    /// `sslmode`) are `.invalidConfiguration`; a server that refuses or is absent, `.cannotOpen`.
    init(server: PostgresServer, timeout: Int) throws {
        let name = server.name
        guard let handle = PQconnectStart(server.conninfo) else {
            throw ReservoirError(.cannotOpen, "\(name): cannot connect: libpq could not allocate a connection")
        }
        if PQstatus(handle) == CONNECTION_BAD {
            // Nothing was sent yet: libpq refused the options themselves.
            let message = server.redact(Self.message(PQerrorMessage(handle)))
            PQfinish(handle)
            throw ReservoirError(.invalidConfiguration, "\(name): libpq rejects the connection options before contacting any server: \(message)")
        }
        let deadline: ContinuousClock.Instant? = server.connectTimeout > 0 ? .now + .seconds(server.connectTimeout) : nil
        var state = PGRES_POLLING_WRITING
        while state != PGRES_POLLING_OK {
            if state == PGRES_POLLING_FAILED {
                let message = server.redact(Self.message(PQerrorMessage(handle)))
                PQfinish(handle)
                throw ReservoirError(.cannotOpen, "\(name): cannot connect: \(PGFailure.connectCause(message))")
            }
            let ready = Self.waitForSocket(PQsocket(handle), writing: state == PGRES_POLLING_WRITING, until: deadline)
            if ready == 0 {
                PQfinish(handle)
                throw ReservoirError(.timeout, "\(name): cannot connect: the server did not complete the connection within \(server.connectTimeout) s (connect_timeout=\(server.connectTimeout))")
            }
            state = PQconnectPoll(handle)
        }
        reservoir_pq_silence(handle)
        // Sends never block: a full socket buffer is waited for in poll, with the deadline.
        _ = PQsetnonblocking(handle, 1)
        self.handle = handle
        self.name = name
        self.timeout = timeout
        guard PQparameterStatus(handle, "server_encoding").map({ String(cString: $0) }) == "UTF8" else {
            let encoding = PQparameterStatus(handle, "server_encoding").map { String(cString: $0) } ?? "unknown"
            throw ReservoirError(.cannotOpen, "\(name): the database's encoding is \(encoding); Reservoir needs a UTF8 database (createdb -E UTF8)")
        }
    }

    deinit {
        PQfinish(handle)
    }

    /// Whether the connection still reaches the server, as far as libpq knows (it learns of
    /// a lost server only when a command fails).
    var isConnected: Bool { !broken && PQstatus(handle) == CONNECTION_OK }

    /// Whether `error`, thrown by a call on this connection, says the connection is lost (a
    /// server restart, a cut) rather than that the call timed out: a caller may then try once
    /// more on a fresh connection where nothing was sent; after a timeout the call has used its time.
    func isLost(after error: ReservoirError) -> Bool { !isConnected && error.code != .timeout }

    /// Connected and outside a transaction, or with only a deferred tail's answers owed (its
    /// `COMMIT` ends the transaction).
    var isHealthy: Bool { isConnected && (!deferred.isEmpty || PQtransactionStatus(handle) == PQTRANS_IDLE) }
    var inTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// The server process serving this connection (the sender of its notifications).
    var backendPID: Int32 { PQbackendPID(handle) }

    // MARK: - Running SQL

    /// Runs SQL without parameters (one or more statements; text results of the last).
    @discardableResult
    func execute(_ sql: String) throws -> PGResult {
        if hasPending { try flush() }
        return try check(exec { PQsendQuery(handle, sql) }, sql)
    }

    /// Runs `sql` with `parameters` bound in binary, preparing it on first use.
    @discardableResult
    /// Writes still queued go out in the same round trip, ahead of it (the first error among
    /// them is thrown).
    func run(_ sql: String, _ parameters: [PGParameter] = [], binaryResults: Bool = true) throws -> PGResult {
        if !queued.isEmpty {
            let answer = try pipeline([.prepared(sql, parameters, binary: binaryResults)])
            if let error = answer.failure ?? answer.lost { throw error }
            guard let result = answer.results.last ?? nil else { throw connectionError() }
            return result
        }
        if hasPending { try flush() }
        let statement = try statementName(for: sql)
        return try PGParameter.withBound(parameters) { values, lengths, formats in
            try check(exec { statement.withCString { PQsendQueryPrepared(handle, $0, Int32(parameters.count), values, lengths, formats, binaryResults ? 1 : 0) } }, sql)
        }
    }

    func statementName(for sql: String) throws -> String {
        // The lengths first (a native string's is stored): a text of another length is
        // rejected without comparing the two, which `==` does in full when they differ.
        let length = sql.utf8.count
        for recent in recentNames where recent.sql.utf8.count == length && recent.sql == sql { return recent.name }
        if let name = prepared[sql] {
            remember(sql, name)
            return name
        }
        let name = "r\(prepared.count + 1)"
        _ = try check(exec { PQsendPrepare(handle, name, sql, 0, nil) }, sql)
        prepared[sql] = name
        remember(sql, name)
        return name
    }

    /// Keeps `sql`'s name among the last few looked up.
    private func remember(_ sql: String, _ name: String) {
        if recentNames.count >= Self.recentNameLimit { recentNames.removeFirst() }
        recentNames.append((sql, name))
    }

    private static let recentNameLimit = 12

    /// Forgets every prepared statement (after a schema change: a prepared `SELECT` whose
    /// column changed type fails with "cached plan must not change result type").
    func dropPrepared() throws {
        // Queued writes go first, under the names they were prepared with, and their errors
        // are thrown here rather than lost.
        try flush()
        guard !prepared.isEmpty else { return }
        prepared.removeAll()
        recentNames.removeAll()
        _ = try? execute("DEALLOCATE ALL")
    }

    func check(_ result: OpaquePointer?, _ sql: String) throws -> PGResult {
        guard let result else {
            throw ReservoirError(.backend, "\(name): \(PGFailure.connectionCause(Self.message(PQerrorMessage(handle))))")
        }
        let wrapped = PGResult(result)
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return wrapped
        default:
            throw PGFailure.error(result: result, connection: self, sql: sql)
        }
    }

    static func message(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        // libpq's messages span lines ("…failed: Connection refused\n\tIs the server running…").
        return String(cString: pointer).split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    // MARK: - Notifications

    /// Reads what the server sent without waiting; false when the connection is broken.
    func consumeInput() -> Bool {
        PQconsumeInput(handle) == 1
    }

    /// The notifications received so far, each as (sender process, channel, payload).
    func takeNotifications() -> [(sender: Int32, channel: String, payload: String)] {
        var received: [(Int32, String, String)] = []
        while let notification = PQnotifies(handle) {
            received.append((notification.pointee.be_pid, String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return received
    }

    /// The socket, for waiting on notifications.
    var socket: Int32 { PQsocket(handle) }
}

/// A result (`PGresult`), cleared when released.
final class PGResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    var rowCount: Int { Int(PQntuples(handle)) }
    var columnCount: Int { Int(PQnfields(handle)) }

    func columnName(_ column: Int) -> String {
        String(cString: PQfname(handle, Int32(column)))
    }

    /// Rows an INSERT, UPDATE or DELETE touched.
    var affectedRows: Int {
        Int(String(cString: PQcmdTuples(handle))) ?? 0
    }

    func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) == 1
    }

    /// The raw bytes of a field (binary or text, as the result was asked for).
    func bytes(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer {
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let pointer = PQgetvalue(handle, Int32(row), Int32(column)) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: length)
    }

    /// A text-format field as a string (nil when null).
    func text(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column), let pointer = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        return String(cString: pointer)
    }

    /// A binary `bigint` field.
    func int64(_ row: Int, _ column: Int) -> Int64 {
        let raw = bytes(row, column)
        guard raw.count == 8 else { return 0 }
        return Int64(bigEndian: raw.loadUnaligned(as: Int64.self))
    }
}
