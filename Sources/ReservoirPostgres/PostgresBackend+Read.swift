import Foundation
import Reservoir

/// Reads in as few round trips as the readers' lock allows.
///
/// A read transaction takes the readers' shared lock (``Layout/rewriteKeys``: a column rewrite
/// takes it exclusively, PostgreSQL's table rewrites not being MVCC-safe) before its snapshot,
/// then `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY` and the meta row (the first
/// statement, which takes the snapshot: the catalog and sequence describe exactly it), and ends
/// with `COMMIT` and the unlock. Sent one after the other that is four round trips around the
/// reader's own statements. Here they go in one pipeline with the transaction's first statement
/// (``Layout/readStart``):
///
/// 1. the shared lock in a transaction of its own (`BEGIN`, the lock, `END`), so it is held
///    before the reading transaction's first statement takes the snapshot;
/// 2. `BEGIN`, the meta row, and the first statement, built from the catalog the store last
///    loaded, and used only when the meta row names that catalog (otherwise it runs again
///    under the snapshot's own);
/// 3. at the transaction's end, `END` and the unlock (``Layout/readEnd``), in a segment of
///    their own (``PGPipelineItem/sync``), which runs even when the transaction failed (`END`
///    then rolls back). They are sent but not waited for: the server runs them at once, and
///    their answers are read at the connection's next use, in that use's round trip
///    (``PGConnection/pipeline(_:deferring:)``).
///
/// So a fetch is one round trip, and `Store.get` (``row(_:id:)``), `Store.fetch`
/// (``fetch(_:expecting:each:)``) and `Store.count` (``count(_:)``), whose statements are all
/// known before the transaction starts, one as well, their end included, in one segment.
extension PostgresBackend {
    public func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        var connection = try acquireReader()
        var healthy = false
        defer { releaseReader(connection, healthy: healthy) }
        if !created.withLock({ $0 }) {
            // No write has created the store yet: an empty snapshot, unless one just did.
            do {
                _ = try replacingLost(&connection) { try $0.execute(Layout.readBegin) }
                if try !tablesExist(connection) {
                    let empty = PGReadTransaction(connection: connection, layout: layout, catalog: Catalog(version: 0, tables: [:]), sequence: 0)
                    empty.absent = true
                    empty.refusesForeignTables = true
                    let result = try body(empty)
                    try connection.execute("COMMIT")
                    healthy = connection.isHealthy
                    return result
                }
                try connection.execute("COMMIT")
            } catch {
                if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
                healthy = connection.isHealthy
                throw error
            }
        }
        // The server transaction begins with the body's first statement, which rides along.
        let guess = cachedCatalog.withLock { $0 } ?? Catalog(version: -1, tables: [:])
        let pooled = connection
        let transaction = PGReadTransaction(connection: connection, layout: layout, catalog: guess, sequence: 0) { [unowned self] first in
            try self.beginRead(pooled, first)
        }
        transaction.refusesForeignTables = true
        let result: R
        do {
            defer { transaction.end() }
            result = try body(transaction)
        } catch {
            connection = transaction.connection
            if transaction.begun { _ = try? connection.execute("ROLLBACK; " + layout.readUnlock) }
            healthy = connection.isHealthy
            throw error
        }
        connection = transaction.connection
        if transaction.begun { _ = try? connection.pipeline([], deferring: layout.readEnd) }
        healthy = connection.isHealthy
        return result
    }

    /// `Store.get`'s point read in one segment (``alone(_:_:decode:)``); otherwise the ordinary read.
    public func row(_ entity: String, id: Value) throws -> Row? {
        try checkOpen()
        if let catalog = knownCatalog(entity) {
            // The SELECT's text as the connection keeps it for this catalog version (spelled
            // once, not at every read).
            let key = StatementKey(entity: entity, kind: .byID, present: 0)
            let answered = try alone({ connection in
                let cached = connection.text(key, catalog: catalog.version)
                let statement = PGReadTransaction.rowStatement(entity, id: id, in: catalog, layout: layout, cached: cached)
                if let sql = statement?.sql, cached == nil { connection.keep(sql, for: key, catalog: catalog.version) }
                return statement
            }, catalog) { result, table, connection in
                try PGReadTransaction.decodeFirst(result, table, connection: connection)
            }
            if let row = answered { return row }
        }
        return try read { try $0.row(entity, id: id) }
    }

    /// `Store.fetch`'s read in one segment (``alone(_:_:decode:)``); otherwise the ordinary read.
    public func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        try checkOpen()
        if let catalog = knownCatalog(query.entity.name) {
            let answered: Void? = try alone({ connection in statement(query, counting: false, on: connection, catalog) }, catalog) { result, table, connection in
                try PGReadTransaction.deliver(result, table, connection: connection, expecting: expecting, each: body)
            }
            if answered != nil { return }
        }
        try read { try $0.fetch(query, expecting: expecting, each: body) }
    }

    /// `Store.count`'s read in one segment (``alone(_:_:decode:)``); otherwise the ordinary read.
    public func count(_ query: Query) throws -> Int {
        try checkOpen()
        if let catalog = knownCatalog(query.entity.name),
           let count = try alone({ connection in statement(query, counting: true, on: connection, catalog) }, catalog,
                                 decode: { result, _, _ in PGReadTransaction.count(of: result) }) {
            return count
        }
        return try read { try $0.count(query) }
    }

    /// `query` (its `count(*)` when `counting`) compiled for its table in `catalog`, its SQL
    /// kept by `connection` for a value-free shape; nil when `catalog` has no such table.
    private func statement(_ query: Query, counting: Bool, on connection: PGConnection, _ catalog: Catalog)
        -> (sql: String, parameters: [PGParameter], table: TableInfo)? {
        catalog.tables[query.entity.name].map { table in
            let compiled = PGCompiler.compile(query, table: table, layout: layout, counting: counting,
                                              text: { connection.text($0, catalog: catalog.version) },
                                              keep: { connection.keep($0, for: $1, catalog: catalog.version) })
            return (compiled.sql, compiled.parameters, table)
        }
    }

    /// The catalog the store last loaded, when it has `entity`'s table and the store exists:
    /// a read of that table may then be sent in one segment.
    private func knownCatalog(_ entity: String) -> Catalog? {
        guard created.withLock({ $0 }), let catalog = cachedCatalog.withLock({ $0 }), catalog.tables[entity] != nil else { return nil }
        return catalog
    }

    /// A read transaction of one statement, known before it starts, in one segment of one round
    /// trip: the lock, `BEGIN`, the meta row, the statement `make` builds from `catalog` (on the
    /// reader connection it is given), `END` and the unlock. (One segment rather than a
    /// deferred end: libpq sends at every sync, so a second segment is a second send, and a
    /// second wake-up of the server.) `decode` reads the statement's result when everything
    /// succeeded and the meta row names `catalog`; nil otherwise (no statement, a connection
    /// whose prepared statements belong to another catalog, a statement the table no longer
    /// fits, another catalog committed meanwhile, an error), and the caller runs the ordinary
    /// read, which loads the catalog and reports errors as always. When anything in the
    /// segment fails, the server skips the rest, so the transaction is rolled back and the lock
    /// released here, in a round trip of their own.
    private func alone<R>(_ make: (PGConnection) -> (sql: String, parameters: [PGParameter], table: TableInfo)?, _ catalog: Catalog,
                          decode: (PGResult, TableInfo, PGConnection) throws -> R) throws -> R? {
        let connection = try acquireReader()
        var healthy = connection.isHealthy
        defer { releaseReader(connection, healthy: healthy) }
        let statement = make(connection)
        let answer: PGPipelineAnswer
        let table: TableInfo
        do {
            guard let (sql, parameters, statementTable) = statement, connection.preparedCatalog == catalog.version,
                  try prepares(sql, on: connection) else { return nil }
            table = statementTable
            var items = layout.readStart
            items.reserveCapacity(items.count + 1 + layout.readEnd.count)
            items.append(.prepared(sql, parameters))
            items.append(contentsOf: layout.readEnd)
            answer = try connection.pipeline(items)
        } catch let error as ReservoirError where connection.isLost(after: error) {
            // Preparing a statement met a pooled connection that outlived a server restart (or
            // a cut): nothing was sent, and the ordinary read starts on another connection.
            healthy = false
            dropIdleReaders()
            return nil
        } catch {
            healthy = false
            throw error
        }
        if answer.succeeded, let meta = answer.results[Layout.readMetaResult], let result = answer.results[Layout.readMetaResult + 1],
           meta.text(0, 1).flatMap({ Int64($0) }) == catalog.version {
            healthy = connection.isHealthy
            learnt(meta.text(0, 3))
            return try decode(result, table, connection)
        }
        if answer.lost == nil, !answer.succeeded {
            // One segment: an error skipped the rest of it, END and the unlock included.
            _ = try? connection.execute((connection.inTransaction ? "ROLLBACK; " : "") + layout.readUnlock)
        }
        healthy = connection.isHealthy
        // The call has used its time: no second try.
        if let lost = answer.lost, lost.code == .timeout { throw lost }
        // The lock refused (a lock timeout): as the ordinary read reports it, without
        // waiting a second time.
        if answer.lost == nil, answer.results[0] != nil, answer.results[1] == nil, let failure = answer.failure { throw failure }
        return nil
    }

    /// Begins a read transaction on `connection` (1 and 2 above), with `first` when
    /// given, replacing a lost pooled connection once (``replacingLost(_:_:)``).
    private func beginRead(_ connection: PGConnection, _ first: PGReadTransaction.FirstRead?) throws -> PGReadTransaction.Start {
        var connection = connection
        return try replacingLost(&connection) { try startRead($0, first) }
    }

    /// Runs `body`, a read's first call, on the reader `connection`. When that finds it lost (a
    /// pooled connection that outlived a server restart), the pool is emptied, since the restart
    /// ended the connections idle in it too, and `body` runs once more on a fresh connection,
    /// which `connection` becomes. Not after a timeout: the call has used its time.
    private func replacingLost<R>(_ connection: inout PGConnection, _ body: (PGConnection) throws -> R) throws -> R {
        do {
            return try body(connection)
        } catch let error as ReservoirError where connection.isLost(after: error) {
            dropIdleReaders()
            connection = try freshReader()
            return try body(connection)
        }
    }

    /// Prepares `sql`, a statement built from the catalog the store last knew, on `connection`
    /// ahead of a pipeline; false when the server refuses it, and the caller reads the ordinary
    /// way. Preparing happens outside any transaction, against the tables as they are now: after
    /// another client's schema change the statement may no longer fit them (a column made mixed
    /// is `bytea`: `starts_with(bytea, text) does not exist`), which is an outdated guess, not
    /// an error of the read. Throws when the connection was lost or the call timed out.
    private func prepares(_ sql: String, on connection: PGConnection) throws -> Bool {
        do {
            _ = try connection.statementName(for: sql)
            return true
        } catch let error as ReservoirError {
            if !connection.isConnected || error.code == .timeout { throw error }
            return false
        }
    }

    private func startRead(_ connection: PGConnection, _ first: PGReadTransaction.FirstRead?) throws -> PGReadTransaction.Start {
        // The first statement goes along only when it is prepared under the catalog it was built from.
        var rides = first.map { $0.catalog >= 0 && $0.catalog == connection.preparedCatalog } ?? false
        if rides, let first { rides = try prepares(first.sql, on: connection) }
        var items = layout.readStart
        if rides, let first { items.append(.prepared(first.sql, first.parameters)) }
        let answer = try connection.pipeline(items)
        if let lost = answer.lost {
            // Its state unknown, the connection is not used again.
            connection.broken = true
            throw lost
        }
        let meta = Layout.readMetaResult
        guard answer.results[0 ... 2].allSatisfy({ $0 != nil }) else {
            // The lock was refused (a lock timeout): its transaction, and what the pipeline
            // ran after it, are rolled back.
            _ = try? connection.execute("ROLLBACK")
            throw answer.error ?? connection.connectionError()
        }
        guard answer.results[meta - 1] != nil, let metaRow = answer.results[meta] else {
            // BEGIN or the meta row failed (a dropped schema): reported as ever.
            _ = try? connection.execute("ROLLBACK; " + layout.readUnlock)
            let failure = answer.error ?? connection.connectionError()
            throw gone(failure) ?? failure
        }
        if rides, answer.results[meta + 1] == nil {
            // The first statement failed: begun again without it, so that, run again, it
            // reports its own error in a transaction that is not aborted.
            _ = try? connection.execute("ROLLBACK; " + layout.readUnlock)
            return try startRead(connection, nil)
        }
        let (position, catalog): (CommitPosition, Catalog)
        do {
            (position, catalog) = try opened(metaRow, connection)
        } catch {
            _ = try? connection.execute(layout.readUnlock)
            throw error
        }
        return .init(connection: connection, position: position, catalog: catalog,
                     identity: learnt(metaRow.text(0, 3)),
                     read: rides && catalog.version == first?.catalog ? answer.results[meta + 1] : nil)
    }
}
