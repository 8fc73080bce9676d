import Foundation
import Reservoir

/// A read snapshot: an open (deferred) transaction on one connection.
class SQLiteReadTransaction: ReadTransaction {
    let session: Session
    /// False once the closure it was passed to has returned: its connection is back in the
    /// pool (or, for a write, out of its transaction, where a statement would autocommit).
    private var isOpen = true

    init(session: Session) {
        self.session = session
    }

    func end() { isOpen = false }

    /// Throws `.misuse` once the transaction has ended.
    func checkOpen() throws {
        guard isOpen else {
            throw ReservoirError(.misuse, "\(sqliteStore(session.path)): a transaction was used after its read or write closure returned; use it only inside the closure")
        }
    }

    var connection: Connection { session.connection }

    /// The entity's table; nil when the entity was never written. Throws `.invalidSchema`
    /// when another application's table has the entity's name.
    func table(_ entity: String) throws -> Catalog.Table? {
        let catalog = try session.checkedCatalog()
        if let table = catalog.tables[entity] { return table }
        if let foreign = catalog.foreignTables[SQL.fold(entity)] {
            throw ReservoirError(.invalidSchema, "\(sqliteStore(session.path)): entity \"\(entity)\" cannot use table \"\(foreign)\", which another application made (Reservoir has no record of it); give the record type another name in its Schema, or rename that table")
        }
        return nil
    }

    func metadata(_ key: String) throws -> Data? {
        try checkOpen()
        return try Metadata.value(key, connection)
    }

    func row(_ entity: String, id: Value) throws -> Row? {
        try checkOpen()
        guard !id.isNull else { return nil }
        if let cached = session.rowStatement(entity) {
            // The hot path: no catalog check. `SELECT *` re-prepares itself when columns
            // were added; a table dropped since fails with SQLITE_ERROR and takes the slow path.
            if cached.integerKey && id.isText { return nil }
            cached.statement.reset()
            do {
                return try Self.row(cached.statement, id: id)
            } catch let error as ReservoirError where error.nativeCode == SQLiteCode.error {
                session.setRowStatement(nil, for: entity)
            }
        }
        guard let table = try table(entity) else { return nil }
        let statement = try connection.cached("SELECT * FROM \(SQL.identifier(entity)) WHERE \(SQL.identifier(table.entity.idColumn)) = ?1")
        session.setRowStatement(Session.RowStatement(statement: statement, integerKey: table.integerKey), for: entity)
        // The rowid's integer affinity would turn text "1" into 1 and find that row; in the
        // contract's order text never equals a number, and an integer key holds only numbers.
        if table.integerKey && id.isText { return nil }
        return try Self.row(statement, id: id)
    }

    /// The row through `session`'s prepared row statement for `entity`, run on its own
    /// outside any transaction (one statement is its own snapshot in SQLite), read into `row`
    /// (in place when it holds the table's columns): whether there is such a row, or nil when
    /// there is no such statement yet, or it failed as a dropped table makes it fail (the
    /// caller then reads in a transaction, which checks the catalog).
    static func cachedRow(_ entity: String, id: Value, in session: Session, into row: inout Row) throws -> Bool? {
        guard let cached = session.rowStatement(entity) else { return nil }
        if id.isNull || (cached.integerKey && id.isText) { return false }
        cached.statement.reset()
        do {
            return try read(cached.statement, id: id, into: &row)
        } catch let error as ReservoirError where error.nativeCode == SQLiteCode.error {
            session.setRowStatement(nil, for: entity)
            return nil
        }
    }

    private static func row(_ statement: Statement, id: Value) throws -> Row? {
        var row = Row()
        return try read(statement, id: id, into: &row) ? row : nil
    }

    /// Runs the row statement for `id` and reads its row into `row`; false when there is none.
    private static func read(_ statement: Statement, id: Value, into row: inout Row) throws -> Bool {
        defer { statement.reset() }
        try statement.bind(id, at: 1)
        guard try statement.step() else { return false }
        statement.read(into: &row, columns: statement.columnNames)
        return true
    }

    func fetch(_ query: Query) throws -> [Row] {
        var rows: [Row] = []
        if let limit = query.limit { rows.reserveCapacity(min(limit, 1024)) }
        try fetch(query) { rows.append($0) }
        return rows
    }

    /// Steps the compiled query, reading each result into one `Row`, refilled in place.
    func fetch(_ query: Query, each body: (Row) throws -> Void) throws {
        try run(query) { statement in
            let columns = statement.columnNames
            var row = Row()
            repeat {
                statement.read(into: &row, columns: columns)
                try body(row)
            } while try statement.step()
        }
    }

    /// Steps the compiled query, lending one reader over the statement's current row for
    /// each result: a record's fields are read from SQLite's columns as they are, with no
    /// `Row` or `Value` between (the statement is the reader's ``ColumnSource``).
    func scan(_ query: Query, expecting: (Int) -> Void, rows: (Row) throws -> Void,
              readers: (borrowing RowReader) throws -> Void) throws {
        try run(query) { statement in
            let reader = RowReader(columns: statement.columnNames, source: statement)
            repeat {
                try readers(reader)
            } while try statement.step()
        }
    }

    /// Compiles, binds and steps `query` once, then calls `body` with the statement on its
    /// first result row, if there is one; `body` steps through the rest. Resets the
    /// statement after.
    private func run(_ query: Query, _ body: (Statement) throws -> Void) throws {
        try checkOpen()
        guard let table = try table(query.entity.name) else { return }
        let compiled = SQLCompiler.compile(query, table: table, counting: false, in: session)
        let statement = try connection.cached(compiled.sql)
        defer { statement.reset() }
        try compiled.bind(to: statement)
        guard try statement.step() else { return }
        try body(statement)
    }

    func count(_ query: Query) throws -> Int {
        try checkOpen()
        guard let table = try table(query.entity.name) else { return 0 }
        let compiled = SQLCompiler.compile(query, table: table, counting: true, in: session)
        let statement = try connection.cached(compiled.sql)
        defer { statement.reset() }
        try compiled.bind(to: statement)
        guard try statement.step() else { return 0 }
        return Int(statement.int64(at: 0))
    }

    func entities() throws -> [EntityDescription] {
        try checkOpen()
        let catalog = try session.checkedCatalog()
        var result: [EntityDescription] = []
        for entity in try Metadata.entities(connection) where catalog.tables[entity.name] != nil {
            let nonEmpty = try connection.scalar("SELECT EXISTS (SELECT 1 FROM \(SQL.identifier(entity.name)))")
            if nonEmpty.integerValue != 0 { result.append(entity) }
        }
        return result
    }

    func lastSequence() throws -> UInt64 {
        try checkOpen()
        return try ChangeLog.lastSequence(connection)
    }

    func storeIdentity() throws -> UUID? {
        try checkOpen()
        return try Metadata.storeIdentity(connection)
    }

    func lastCommit() throws -> CommitPosition {
        try checkOpen()
        let head = try ChangeLog.head(connection)
        return CommitPosition(sequence: head.sequence, commit: head.commit)
    }

    func commit(at sequence: UInt64) throws -> CommitPosition? {
        try checkOpen()
        return try ChangeLog.commit(at: sequence, connection)
    }

    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry] {
        try checkOpen()
        return try ChangeLog.entries(after: sequence, limit: limit, connection)
    }
}
