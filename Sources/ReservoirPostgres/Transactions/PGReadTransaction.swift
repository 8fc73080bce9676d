import CLibPQ
import Foundation
import Reservoir

/// A read transaction: `REPEATABLE READ`, so every statement sees the snapshot taken by the
/// first, and the catalog and sequence read with it describe exactly that snapshot.
class PGReadTransaction: ReadTransaction {
    /// A write transaction's moves to a fresh connection when its first statement finds the
    /// server restarted (``PGWriteTransaction``); a read's never changes.
    var connection: PGConnection
    let layout: Layout
    /// Schema changes in a write transaction replace the tables' descriptions, and with them
    /// the statements made for them.
    var catalog: Catalog { didSet { ownStatements.removeAll() } }
    var sequence: UInt64
    /// The identity of the commit that made change set `sequence` (0: not known).
    var commit: UInt64 = 0
    /// SQL made once per table and shape, for this transaction alone: used once its own
    /// schema changes gave it a catalog no other transaction has (``sharesStatements``).
    private var ownStatements: [StatementKey: String] = [:]
    /// Whether the SQL this transaction makes holds for every transaction on its catalog
    /// version, so the connection keeps it for the next ones: true unless the transaction
    /// changed the schema itself (a write's).
    var sharesStatements: Bool { true }
    /// The store's identity, when the transaction's first read of the meta row brought it.
    var identity: UUID?
    /// The store's tables do not exist yet (no write has created them): nothing to read.
    var absent = false
    /// Set on plain reads: reading a record type the store does not know, whose name another
    /// application's table has in the schema, is refused as the first write of it would be,
    /// rather than answered "none".
    var refusesForeignTables = false

    /// A first statement that reads, built from catalog version `catalog` before the server
    /// transaction began, to send together with `BEGIN` (``PostgresBackend``'s `beginRead` and
    /// `beginWrite`).
    typealias FirstRead = (sql: String, parameters: [PGParameter], catalog: Int64)

    /// A begun transaction: its connection, the sequence and catalog its meta row named, and
    /// the first read's result when the catalog it was built from still holds.
    struct Start {
        let connection: PGConnection
        let position: CommitPosition
        let catalog: Catalog
        /// The store's identity, which names the channel commits are announced on.
        let identity: UUID?
        let read: PGResult?
    }

    /// Begins the server transaction (a read's shared lock and `BEGIN`, or the writer's
    /// `BEGIN` and the meta row's write lock), sending the given first read with it; nil for a
    /// transaction begun before it was made.
    private let opener: ((FirstRead?) throws -> Start)?
    /// Whether the server transaction has begun. Every method begins it before it reads the
    /// catalog: until then `catalog` is the store's last known, which another client's schema
    /// change may have outdated.
    private(set) var begun: Bool

    /// `catalog` is the newest the store knows; the server transaction begins with the first
    /// statement (`opener`), and a first read goes in the same round trip. Without an opener,
    /// the transaction has begun and `catalog` and `sequence` are its snapshot's.
    init(connection: PGConnection, layout: Layout, catalog: Catalog, sequence: UInt64,
         opener: ((FirstRead?) throws -> Start)? = nil) {
        self.connection = connection
        self.layout = layout
        self.catalog = catalog
        self.sequence = sequence
        self.opener = opener
        self.begun = opener == nil
    }

    /// Begins the server transaction unless it has, sending `read` (built from `catalog`)
    /// along. Returns `read`'s result when it holds; nil when the transaction had begun or
    /// the catalog changed meanwhile, and the caller must build and run its statement anew.
    @discardableResult
    func begin(reading read: (sql: String, parameters: [PGParameter])? = nil) throws -> PGResult? {
        try checkOpen()
        guard !begun, let opener else { return nil }
        let start = try opener(read.map { ($0.sql, $0.parameters, catalog.version) })
        begun = true
        connection = start.connection
        sequence = start.position.sequence
        commit = start.position.commit
        identity = start.identity
        if start.catalog.version != catalog.version || catalog.version < 0 { catalog = start.catalog }
        return start.read
    }

    /// False once the closure it was passed to has returned: its connection is back in the
    /// pool (or, for a write, out of its transaction, where a statement would autocommit).
    private var isOpen = true

    func end() { isOpen = false }

    /// Throws `.misuse` once the transaction has ended.
    func checkOpen() throws {
        guard isOpen else {
            throw ReservoirError(.misuse, "\(connection.name): a transaction was used after its read or write closure returned; use it only inside the closure")
        }
    }

    func row(_ entity: String, id: Value) throws -> Row? {
        try checkOpen()
        if !begun, let (sql, parameters, table) = rowStatement(entity, id: id),
           let result = try begin(reading: (sql, parameters)) {
            return try decodeFirst(result, table)
        }
        try begin()
        try refuseForeignTable(entity)
        guard let (sql, parameters, table) = rowStatement(entity, id: id) else { return nil }
        return try decodeFirst(try connection.run(sql, parameters), table)
    }

    /// The SQL made for `key` on this transaction's tables, nil when none was yet.
    func statement(_ key: StatementKey) -> String? {
        sharesStatements ? connection.text(key, catalog: catalog.version) : ownStatements[key]
    }

    /// Keeps `sql`, made for `key` on this transaction's tables.
    func keep(_ sql: String, for key: StatementKey) {
        if sharesStatements {
            connection.keep(sql, for: key, catalog: catalog.version)
        } else {
            ownStatements[key] = sql
        }
    }

    /// The statement reading the row stored under `id`, with the table it reads; nil when
    /// no row can match (no table yet, or an id its key column cannot hold).
    func rowStatement(_ entity: String, id: Value) -> (sql: String, parameters: [PGParameter], table: TableInfo)? {
        let key = StatementKey(entity: entity, kind: .byID, present: 0)
        let cached = statement(key)
        guard let (sql, parameters, table) = Self.rowStatement(entity, id: id, in: catalog, layout: layout, cached: cached) else { return nil }
        if cached == nil { keep(sql, for: key) }
        return (sql, parameters, table)
    }

    /// The statement reading the row stored under `id` in `catalog`'s table for `entity` (its SQL
    /// is `cached` when given), with that table; nil when no row can match.
    static func rowStatement(_ entity: String, id: Value, in catalog: Catalog, layout: Layout,
                             cached: String? = nil) -> (sql: String, parameters: [PGParameter], table: TableInfo)? {
        guard let table = catalog.tables[entity],
              let match = ColumnCodec.equality(table.entity.idColumn, kind: table.idKind, id.stored) else { return nil }
        return (cached ?? "SELECT \(table.selectList) FROM \(layout.table(entity)) WHERE \(match.sql)", match.parameters, table)
    }

    /// The first row of `result` as a ``Row`` of `table`, nil when it has none.
    func decodeFirst(_ result: PGResult, _ table: TableInfo) throws -> Row? {
        try Self.decodeFirst(result, table, connection: connection)
    }

    static func decodeFirst(_ result: PGResult, _ table: TableInfo, connection: PGConnection) throws -> Row? {
        guard result.rowCount > 0 else { return nil }
        return try decodeRow(result, 0, table, connection: connection)
    }

    func fetch(_ query: Query) throws -> [Row] {
        var rows: [Row] = []
        try fetch(query, expecting: { rows.reserveCapacity($0) }, each: { rows.append($0) })
        return rows
    }

    func fetch(_ query: Query, each body: (Row) throws -> Void) throws {
        try fetch(query, expecting: { _ in }, each: body)
    }

    func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        guard let (result, table) = try run(query, counting: false) else { return }
        try Self.deliver(result, table, connection: connection, expecting: expecting, each: body)
    }

    func count(_ query: Query) throws -> Int {
        guard let (result, _) = try run(query, counting: true) else { return 0 }
        return Self.count(of: result)
    }

    /// Announces `result`'s row count to `expecting`, then hands `body` each row, one row
    /// refilled in place for every result row (a body that keeps one keeps a copy).
    static func deliver(_ result: PGResult, _ table: TableInfo, connection: PGConnection,
                        expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        expecting(result.rowCount)
        var row = Row()
        for index in 0..<result.rowCount {
            try decodeRow(result, index, table, connection: connection, into: &row)
            try body(row)
        }
    }

    /// The count a `count(*)` statement's `result` holds.
    static func count(of result: PGResult) -> Int {
        result.rowCount > 0 ? Int(result.int64(0, 0)) : 0
    }

    /// Runs `query` compiled for its table (`counting`: its `count(*)`), with the table; nil
    /// when the store has no table for it. The transaction's first statement rides along with
    /// its `BEGIN` when the table is in the catalog the store knew.
    private func run(_ query: Query, counting: Bool) throws -> (PGResult, TableInfo)? {
        try checkOpen()
        if !begun, let table = catalog.tables[query.entity.name] {
            let compiled = compile(query, table, counting: counting)
            if let result = try begin(reading: (compiled.sql, compiled.parameters)) { return (result, table) }
        }
        try begin()
        try refuseForeignTable(query.entity.name)
        guard let table = catalog.tables[query.entity.name] else { return nil }
        let compiled = compile(query, table, counting: counting)
        return (try connection.run(compiled.sql, compiled.parameters), table)
    }

    /// `query` compiled for `table` of this transaction's catalog, its SQL kept with the
    /// transaction's statements when its shape is value-free.
    private func compile(_ query: Query, _ table: TableInfo, counting: Bool) -> PGQuery {
        guard catalog.version >= 0 else { return PGCompiler.compile(query, table: table, layout: layout, counting: counting) }
        return PGCompiler.compile(query, table: table, layout: layout, counting: counting,
                                  text: { statement($0) }, keep: { keep($0, for: $1) })
    }

    /// Throws `.invalidSchema` when `entity` is not the store's but a table of that name is in
    /// its schema (``refusesForeignTables``).
    func refuseForeignTable(_ entity: String) throws {
        guard refusesForeignTables, catalog.tables[entity] == nil else { return }
        let exists = try connection.execute("SELECT to_regclass(\(Layout.literal(layout.table(entity)))) IS NOT NULL")
        if exists.text(0, 0) == "t" {
            throw ReservoirError(.invalidSchema, "\(connection.name): a table named \(entity) exists in schema \(layout.schema) and was not made by Reservoir (it has no entry in _reservoir_entities); rename it, or open the store with ?schema=OTHER")
        }
    }

    /// The entities whose tables hold a row (a table whose rows were all deleted stays, but
    /// the contract lists only entities holding rows), in one round trip.
    func entities() throws -> [EntityDescription] {
        try begin()
        let entities = catalog.tables.values.map(\.entity).sorted { $0.name < $1.name }
        guard !entities.isEmpty else { return [] }
        let probes = entities.map { "CASE WHEN EXISTS (SELECT 1 FROM \(layout.table($0.name))) THEN 1::bigint ELSE 0::bigint END" }
        let result = try connection.run("SELECT " + probes.joined(separator: ", "), [])
        return entities.indices.filter { result.rowCount > 0 && result.int64(0, $0) != 0 }.map { entities[$0] }
    }

    func lastSequence() throws -> UInt64 {
        try begin()
        return sequence
    }

    func storeIdentity() throws -> UUID? {
        try begin()
        guard !absent else { return nil }
        if let identity { return identity }
        return try connection.run("SELECT store_id::text FROM \(layout.meta)", []).text(0, 0).flatMap(UUID.init(uuidString:))
    }

    /// The bytes under `key` in `_reservoir_metadata` (nil before any metadata was written).
    func metadata(_ key: String) throws -> Data? {
        try begin()
        guard !absent, try metadataTableExists() else { return nil }
        let result = try connection.run("SELECT value FROM \(layout.metadata) WHERE key = $1::text", [.text(key)])
        guard result.rowCount > 0, !result.isNull(0, 0) else { return nil }
        return Data(result.bytes(0, 0))
    }

    func metadataTableExists() throws -> Bool {
        try connection.run("SELECT to_regclass($1::text) IS NOT NULL", [.text(layout.metadata)], binaryResults: false).text(0, 0) == "t"
    }

    func lastCommit() throws -> CommitPosition {
        try begin()
        return CommitPosition(sequence: sequence, commit: commit)
    }

    func commit(at sequence: UInt64) throws -> CommitPosition? {
        try begin()
        if sequence == self.sequence { return CommitPosition(sequence: sequence, commit: commit) }
        guard !absent, sequence > 0, let number = Int64(exactly: sequence) else { return sequence == 0 ? .start : nil }
        let result = try connection.run("SELECT commit_id FROM \(layout.changes) WHERE sequence = $1::bigint LIMIT 1", [.integer(number)])
        guard result.rowCount > 0 else { return nil }
        return CommitPosition(sequence: sequence, commit: result.isNull(0, 0) ? 0 : UInt64(bitPattern: result.int64(0, 0)))
    }

    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry] {
        try begin()
        guard limit > 0, !absent else { return [] }
        // The upper bound is computed once, in numeric so that `min + limit` cannot leave bigint's
        // range even for a limit of Int.max, and compared with the bare column so that the sequence
        // index bounds the scan on both sides: `sequence - limit < min` was a filter over every
        // row after the token, which made a catch-up in batches quadratic in the log's length.
        let after = Int64(clamping: sequence)
        let result = try connection.run(
            """
            SELECT sequence, entity, kind, ids, key, commit_id FROM \(layout.changes)
            WHERE sequence > $1::bigint
              AND sequence <= (SELECT LEAST(min(sequence)::numeric + $2::bigint - 1, 9223372036854775807)::bigint
                              FROM \(layout.changes) WHERE sequence > $1::bigint)
            ORDER BY sequence, change
            """,
            [.integer(after), .integer(Int64(clamping: limit))])
        var entries: [ChangeLogEntry] = []
        for row in 0..<result.rowCount {
            let sequence = UInt64(clamping: result.int64(row, 0))
            let entity = String(decoding: result.bytes(row, 1), as: UTF8.self)
            let kind: ChangeType
            switch String(decoding: result.bytes(row, 2), as: UTF8.self) {
            case "i": kind = .inserted
            case "u": kind = .updated
            case "d": kind = .deleted
            case let other:
                throw ReservoirError(.corrupt, "\(connection.name): change-log row of sequence \(sequence) has kind \"\(other)\"; expected i, u or d")
            }
            let ids: [Value]?
            if !result.isNull(row, 3) {
                ids = PackedIDs.unpack(Data(result.bytes(row, 3)))
            } else if !result.isNull(row, 4) {
                ids = ColumnCodec.value(result.bytes(row, 4), kind: .mixed).map { [$0] }
            } else {
                ids = nil
            }
            guard let ids else {
                throw ReservoirError(.corrupt, "\(connection.name): change-log row of sequence \(sequence) holds no readable ids")
            }
            let commit = result.isNull(row, 5) ? 0 : UInt64(bitPattern: result.int64(row, 5))
            for id in ids {
                entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind, commit: commit))
            }
        }
        return entries
    }

    /// A stored row as ``Row``: the record type's fields in its order (null where the table
    /// has no column yet: never written with a value), then any other columns the table has.
    func decodeRow(_ result: PGResult, _ index: Int, _ table: TableInfo) throws -> Row {
        try Self.decodeRow(result, index, table, connection: connection)
    }

    /// ``decodeRow(_:_:_:)`` outside a transaction (`connection` names the store in errors).
    static func decodeRow(_ result: PGResult, _ index: Int, _ table: TableInfo, connection: PGConnection) throws -> Row {
        var row = Row()
        try decodeRow(result, index, table, connection: connection, into: &row)
        return row
    }

    /// Decodes row `index` of `result` into `row`, overwriting its values in place when it
    /// already holds the table's columns (the previous row of a fetch): no row is allocated
    /// and freed for each one. A null field has length 0, so only an empty field asks
    /// `PQgetisnull` whether it is null or an empty text or blob.
    static func decodeRow(_ result: PGResult, _ index: Int, _ table: TableInfo, connection: PGConnection, into row: inout Row) throws {
        let shape = table.rowShape
        if !Row.sameColumns(row.columns, shape.columns) {
            row = Row(columns: shape.columns, values: Array(repeating: .null, count: shape.columns.count))
        }
        let handle = result.handle
        let line = Int32(index)
        // The slot whose stored value did not decode, if any.
        let damaged: Int? = shape.fields.withUnsafeBufferPointer { fields in
            row.withUnsafeMutableValues { values in
                for slot in 0..<min(values.count, fields.count) {
                    let field = fields[slot]
                    guard field.position >= 0 else {
                        Row.overwrite(values, at: slot, with: .null)
                        continue
                    }
                    let length = Int(PQgetlength(handle, line, field.position))
                    if length == 0, PQgetisnull(handle, line, field.position) == 1 {
                        Row.overwrite(values, at: slot, with: .null)
                        continue
                    }
                    let raw = UnsafeRawBufferPointer(start: PQgetvalue(handle, line, field.position), count: length)
                    guard let value = ColumnCodec.value(raw, kind: field.kind) else { return slot }
                    Row.overwrite(values, at: slot, with: value)
                }
                return nil
            }
        }
        if let slot = damaged {
            throw ReservoirError(.corrupt, "\(connection.name): table \(table.entity.name), column \(shape.columns[slot]): a stored value does not decode as \(shape.fields[slot].kind)")
        }
    }
}
