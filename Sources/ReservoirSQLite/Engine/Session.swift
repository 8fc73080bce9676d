import Reservoir

/// One connection with its catalog: the unit the reader pool hands out, and the writer.
final class Session {
    let connection: Connection
    let catalog = Catalog()
    /// `SELECT * … WHERE id = ?1` per entity, the hottest statement, and the one used last:
    /// most runs of reads are of one entity, whose name is then compared, not hashed.
    /// (`@exclusivity(unchecked)`: a session is used by one thread at a time.)
    @exclusivity(unchecked) private var rowStatements: [String: RowStatement] = [:]
    @exclusivity(unchecked) private var lastRowStatement: (entity: String, statement: RowStatement)?
    /// The row point reads lend (``SQLiteBackend/withRow(_:id:_:)``), refilled in place.
    @exclusivity(unchecked) var lent = Row()

    /// The row-by-id select prepared for `entity`, if there is one.
    @inline(__always)
    func rowStatement(_ entity: String) -> RowStatement? {
        if let last = lastRowStatement, last.entity == entity { return last.statement }
        guard let found = rowStatements[entity] else { return nil }
        lastRowStatement = (entity, found)
        return found
    }

    /// Keeps (or, given nil, forgets) the row-by-id select of `entity`.
    func setRowStatement(_ statement: RowStatement?, for entity: String) {
        rowStatements[entity] = statement
        lastRowStatement = statement.map { (entity, $0) }
    }

    /// Forgets every row-by-id select (their tables may have changed).
    func forgetRowStatements() {
        rowStatements = [:]
        lastRowStatement = nil
    }
    /// `INSERT` and `INSERT … ON CONFLICT DO UPDATE` per entity and row shape (see `SQLiteWriteTransaction`).
    var writes: [WriteKey: Statement] = [:]
    /// The previous write's statement and what it was prepared for.
    var lastWrite: LastWrite?
    /// The change log's head after this connection's last write transaction, and the data
    /// version right after its commit. While the version is unchanged, no other writer (a
    /// plain SQL client, another process, the pending-row numbering) has committed since,
    /// so the next write needs no look at the log nor at the schema version. Nil until the
    /// first write and after a failed one. (The version is a 32-bit counter: a wrong match
    /// needs exactly 2^32 commits in between.)
    var logHead: LogHead?

    struct LogHead {
        let dataVersion: UInt32
        let head: ChangeLog.Head
    }

    /// A row-by-id select and whether its table's id column is the rowid.
    struct RowStatement {
        let statement: Statement
        let integerKey: Bool
    }

    /// The previous write, so a run of writes of one shape skips the catalog and the cache.
    final class LastWrite {
        let key: WriteKey
        let statement: Statement
        /// The catalog revision the table was ready at.
        let revision: Int
        /// The entity description the table was prepared for.
        let description: EntityDescription
        /// Where the id sits in the row's columns (the statement binds it first).
        let idPosition: Int?
        /// Whether the table's id column is the rowid, so only integer ids fit.
        let integerKey: Bool

        /// Whether a write of `columns` into `entity` with `mode`, at catalog `revision`, can
        /// reuse this one's statement. A method, so that it reads the fields in place.
        func fits(_ entity: EntityDescription, columns: [String], mode: WriteMode, revision: Int) -> Bool {
            self.revision == revision && key.mode == mode && key.columns == columns && description == entity
        }

        init(key: WriteKey, statement: Statement, revision: Int, description: EntityDescription, integerKey: Bool) {
            self.key = key
            self.statement = statement
            self.revision = revision
            self.description = description
            self.integerKey = integerKey
            self.idPosition = key.columns.firstIndex(of: description.idColumn)
        }
    }

    enum WriteMode: Hashable {
        /// Insert or replace.
        case upsert
        /// Insert; fails with SQLITE_CONSTRAINT_PRIMARYKEY when the id exists.
        case insert
    }

    struct WriteKey: Hashable {
        var mode: WriteMode
        var entity: String
        var columns: [String]
        var tableColumnCount: Int
    }

    private var cacheGeneration = 0

    /// The SQL of queries of a value-free shape (``SQLQueryShape``), for the tables of catalog
    /// revision `queryTextsRevision`; at most ``queryTextLimit`` of them.
    private var queryTexts: [SQLQueryShape: String] = [:]
    private var queryTextsRevision = -1
    static let queryTextLimit = 256

    /// The last shape looked up and its SQL: a run of reads of one shape compares it and
    /// hashes nothing.
    private var lastQueryText: (shape: SQLQueryShape, sql: String)?

    /// The SQL kept for `shape` at the catalog's current revision.
    func queryText(_ shape: SQLQueryShape) -> String? {
        guard queryTextsRevision == catalog.revision else { return nil }
        if let last = lastQueryText, last.shape == shape { return last.sql }
        guard let sql = queryTexts[shape] else { return nil }
        lastQueryText = (shape, sql)
        return sql
    }

    /// Keeps `sql`, compiled for `shape` on the catalog's tables as they are.
    func keep(_ sql: String, for shape: SQLQueryShape) {
        if queryTextsRevision != catalog.revision || queryTexts.count >= Self.queryTextLimit {
            queryTexts.removeAll()
            queryTextsRevision = catalog.revision
        }
        queryTexts[shape] = sql
        lastQueryText = (shape, sql)
    }

    init(connection: Connection) {
        self.connection = connection
    }

    /// The catalog, checked against the schema version once per transaction; statement
    /// caches built on tables that changed since are dropped.
    @inline(__always)
    func checkedCatalog() throws -> Catalog {
        try catalog.refreshIfNeeded(connection)
        if catalog.generation != cacheGeneration {
            forgetRowStatements()
            writes = [:]
            lastWrite = nil
            cacheGeneration = catalog.generation
        }
        return catalog
    }

    var path: String { connection.path }
}
