import CSQLite
import Foundation
import Reservoir

/// The SQLite backend, `sqlite:PATH`.
///
///     let store = try Store.open("sqlite:./app.sqlite?durability=full", registry: BackendRegistry([.sqlite]))
///
/// One table per entity, one column per field, readable with the `sqlite3` shell; a
/// change log this library writes for its own commits and triggers keep for any other
/// SQLite client's, so every commit reaches subscriptions.
/// The database runs in WAL mode with one writer connection and a pool of reader
/// connections, so reads never wait for the writer. Docs/Design/SQLite.md describes
/// the layout, the SQL each predicate compiles to, durability and multi-process use.
public final class SQLiteBackend: StorageBackend, @unchecked Sendable {
    // @unchecked: each connection is used under its lock (writer, probe) or by one
    // thread at a time through the pool.

    public let location: String
    public let options: SQLiteOptions
    /// What the change log keeps (the `retention=`, `retentionage=` and `holdage=` options).
    public var historyRetention: HistoryRetention? { options.history }
    public var capabilities: BackendCapabilities { [.persistent, .multiProcess, .nativeQueries, .commitSignal, .readOnlyOpening] }
    /// Whether the store was opened read-only: `mode=readonly`, or a file this process may
    /// not write. Writes then throw `.readOnly`; reads and subscriptions work.
    public let isReadOnly: Bool

    private let writerLock = NSLock()
    private var writer: Session?
    private let checkpointer: Checkpointer
    private let pool: ReaderPool
    private let probeLock = NSLock()
    private var probe: Connection?
    private var lastDataVersion: Int64 = .min
    /// Set when pending change rows were seen but not numbered yet (and at open).
    private var pendingToNumber = true
    /// Whether ``close()`` was called: every call reads it, with one atomic load.
    private let isClosed = SetOnceFlag()
    /// The database file this backend opened; checked when the store is probed and when a
    /// write begins, so a deleted or replaced file stops the store (`.gone`).
    private let identity: FileIdentity

    /// Opens (creating if needed) the database at `path`.
    ///
    /// Throws `.cannotOpen` for a missing directory or a file that is not a SQLite
    /// database, `.busy` when another process holds the database locked longer than
    /// the busy timeout, `.corrupt` for a newer or damaged format; every message names `path`.
    public init(path: String, options: SQLiteOptions = SQLiteOptions()) throws {
        guard !path.isEmpty else {
            throw ReservoirError(.invalidConfiguration, "sqlite: needs a file path, as in sqlite:./app.sqlite")
        }
        self.location = path
        self.options = options
        let busyTimeout = options.busyTimeoutMilliseconds
        // An existing file this process may not write opens read-only, rather than not at all.
        isReadOnly = options.readOnly || (FileManager.default.fileExists(atPath: path) && access(path, W_OK) != 0)
        checkpointer = Checkpointer(path: path, synchronous: Self.synchronous(options))
        // WAL readers need the -shm file; where it is missing and cannot be made, the file is
        // read as immutable (Backends.md § SQLite, "Read-only").
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let immutable = isReadOnly && !FileManager.default.fileExists(atPath: path + "-shm") && access(directory, W_OK) != 0
        if isReadOnly {
            let reader = try Connection(path: path, create: false, busyTimeout: busyTimeout, readOnly: true, immutable: immutable)
            guard try Metadata.isSetUp(reader) else {
                throw ReservoirError(.cannotOpen, "\(sqliteStore(path)): cannot open it read-only: it holds no Reservoir store yet (open it writable once to create one)")
            }
            try Metadata.checkFormat(reader)
            self.writer = nil
        } else {
            let writerConnection = try Connection(path: path, create: true, busyTimeout: busyTimeout)
            try Self.configureWriter(writerConnection, options: options)
            try writerConnection.disableTriggers()
            let writer = Session(connection: writerConnection)
            try Self.setUp(writer, busyTimeout: busyTimeout)
            self.writer = writer
            checkpointer.install(on: writerConnection)
        }
        self.pool = ReaderPool(path: path, busyTimeout: busyTimeout, maxIdle: options.readers, readOnly: isReadOnly, immutable: immutable)
        let probe = try Connection(path: path, create: false, busyTimeout: busyTimeout, readOnly: isReadOnly, immutable: immutable)
        try probe.execute("PRAGMA query_only = 1")
        self.probe = probe
        self.lastDataVersion = try probe.scalar("PRAGMA data_version").integerValue
        self.identity = try FileIdentity(path: path, store: sqliteStore(path))
    }

    deinit {
        close()
    }

    private static func configureWriter(_ connection: Connection, options: SQLiteOptions) throws {
        // The first statement reads the file header: a file that is not a database fails here.
        let mode: Value
        do {
            mode = try connection.scalar("PRAGMA journal_mode = WAL")
        } catch let error as ReservoirError where error.nativeCode.map({ SQLiteCode.primary($0) == SQLITE_NOTADB }) ?? false {
            throw ReservoirError(.cannotOpen, "\(sqliteStore(connection.path)): cannot open it: the file is not a SQLite database", nativeCode: error.nativeCode, nativeMessage: error.nativeMessage)
        }
        guard case let .text(name) = mode, name.lowercased() == "wal" else {
            throw ReservoirError(.cannotOpen, "\(sqliteStore(connection.path)): cannot switch it to WAL mode (journal mode is \(mode)); is the file on a filesystem without shared memory support?")
        }
        try connection.execute("PRAGMA synchronous = \(synchronous(options))")
    }

    private static func synchronous(_ options: SQLiteOptions) -> String {
        switch options.durability {
        case .full: "FULL"
        case .normal: "NORMAL"
        case .none: "OFF"
        }
    }

    /// Creates the backend's tables when missing (taking the write lock only then, so a
    /// store opens while another process is writing) and checks the format version.
    /// Change rows left by plain SQL writers while no store was open are numbered here
    /// when the write lock is free at once, else by the first ``commitToken()``.
    private static func setUp(_ session: Session, busyTimeout: Int32) throws {
        let connection = session.connection
        if try Metadata.isSetUp(connection) {
            try Metadata.checkFormat(connection)
            if try Metadata.storedFormat(connection) < Metadata.formatVersion {
                return try numberPending(connection, creatingTables: true)
            }
            // Changes plain SQL clients made while no store was open are numbered now, so
            // they are history rather than news; unless another process is writing.
            if try ChangeLog.hasPending(connection) {
                connection.setBusyTimeout(0)
                defer { connection.setBusyTimeout(busyTimeout) }
                try? numberPending(connection)
            }
            return
        }
        try numberPending(connection, creatingTables: true)
    }

    private static func numberPending(_ connection: Connection, creatingTables: Bool = false) throws {
        try Self.beginWrite(connection)
        do {
            if creatingTables { try Metadata.setUp(connection) }
            try ChangeLog.numberPending(connection)
            try connection.statement(.commit).run()
        } catch {
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// `BEGIN IMMEDIATE`: takes the database's write lock now, waiting up to the busy timeout.
    private static func beginWrite(_ connection: Connection) throws {
        do {
            try connection.statement(.beginImmediate).run()
        } catch var error as ReservoirError {
            error.message = "\(sqliteStore(connection.path)): cannot start a write transaction: \(SQLiteFailure.cause(for: error.nativeCode ?? SQLITE_ERROR))"
            throw error
        }
    }

    // MARK: - Transactions

    public func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        let session = try pool.acquire()
        var healthy = true
        defer { pool.release(session, healthy: healthy) }
        try session.connection.statement(.beginDeferred).run()
        let result: R
        let transaction = SQLiteReadTransaction(session: session)
        defer { transaction.end() }
        do {
            result = try body(transaction)
        } catch {
            healthy = Self.end(session, .rollback)
            throw error
        }
        healthy = Self.end(session, .commit)
        return result
    }

    /// The row ``withRow(_:id:_:)`` lends, kept (a copy the next refill leaves alone).
    public func row(_ entity: String, id: Value) throws -> Row? {
        var found: Row?
        _ = try withRow(entity, id: id) { found = $0 }
        return found
    }

    /// Reads in a read transaction of its own, whose statement lends its columns in place.
    public func scan(_ query: Query, expecting: (Int) -> Void, rows: (Row) throws -> Void,
                     readers: (borrowing RowReader) throws -> Void) throws {
        try read { try $0.scan(query, expecting: expecting, rows: rows, readers: readers) }
    }

    /// One statement on a pooled connection, outside a transaction, when the connection has
    /// the entity's row statement prepared (a single statement reads one snapshot): `BEGIN`
    /// and `COMMIT` cost as much as the read itself. Otherwise a read transaction. The row is
    /// read into the session's lent row and handed to `body` before the session goes back to
    /// the pool: a point read allocates and frees no row.
    public func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool {
        try checkOpen()
        let session = try pool.acquire()
        let found: Bool?
        do {
            found = try SQLiteReadTransaction.cachedRow(entity, id: id, in: session, into: &session.lent)
            if found == true { try body(session.lent) }
        } catch {
            pool.release(session, healthy: !session.connection.inTransaction)
            throw error
        }
        pool.release(session, healthy: !session.connection.inTransaction)
        if let found { return found }
        guard let row = try read({ try $0.row(entity, id: id) }) else { return false }
        try body(row)
        return true
    }

    /// Ends a read transaction; false when the connection could not leave it (then discarded).
    private static func end(_ session: Session, _ command: HeldStatement) -> Bool {
        session.catalog.endTransaction()
        if (try? session.connection.statement(command).run()) == nil {
            try? session.connection.execute("ROLLBACK")
        }
        return !session.connection.inTransaction
    }

    public func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        writerLock.lock()
        defer { writerLock.unlock() }
        if isReadOnly {
            try checkOpen()
            throw StoreConfiguration.readOnlyError(sqliteStore(location), explicitly: options.readOnly)
        }
        guard let session = writer else { throw closedError() }
        try identity.check(store: sqliteStore(location))
        let connection = session.connection
        try Self.beginWrite(connection)
        let transaction: SQLiteWriteTransaction
        let result: R
        do {
            let head: ChangeLog.Head
            if let known = session.logHead, let version = connection.dataVersion(), version == known.dataVersion {
                // Nothing committed since this connection's last write: the log and the
                // schema are as it left them.
                head = known.head
                session.catalog.trustForThisTransaction()
            } else {
                // Plain SQL writers' changes get their own sequence first, so they precede ours.
                head = try ChangeLog.beginWrite(connection)
            }
            transaction = SQLiteWriteTransaction(session: session, head: head)
            defer { transaction.end() }
            result = try body(transaction)
            try connection.statement(.commit).run()
        } catch {
            session.logHead = nil
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            // DDL may have been rolled back with the rest: reload the catalog next time.
            session.catalog.invalidate()
            throw error
        }
        session.logHead = connection.dataVersion().map { Session.LogHead(dataVersion: $0, head: transaction.logHead) }
        session.catalog.endTransaction()
        return result
    }

    // MARK: - Other processes

    /// `PRAGMA data_version` on a dedicated connection: changes whenever another
    /// connection (this backend's writer, another process, a plain SQL client) commits.
    /// When it moves and the change log holds rows no sequence covers (written by a plain
    /// SQL client), they are numbered here, so the core's catch-up announces them.
    public func commitToken() throws -> UInt64 {
        probeLock.lock()
        defer { probeLock.unlock() }
        guard let probe else { throw closedError() }
        try identity.check(store: sqliteStore(location))
        let version = try probe.scalar("PRAGMA data_version").integerValue
        // A read-only store cannot number plain SQL writers' changes; a writable one will.
        if !isReadOnly, version != lastDataVersion || pendingToNumber {
            lastDataVersion = version
            pendingToNumber = try ChangeLog.hasPending(probe)
            if pendingToNumber {
                try numberPending()
                pendingToNumber = false
            }
        }
        return UInt64(bitPattern: version)
    }

    /// Any SQLite client's commit writes the `-wal` file (or, after a checkpoint or in
    /// rollback-journal mode, the database file): either write wakes the store.
    public func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)? {
        FileChangeWatch.watching([location, location + "-wal"], wake: wake)
    }

    private func numberPending() throws {
        writerLock.lock()
        defer { writerLock.unlock() }
        guard let session = writer else { throw closedError() }
        try Self.numberPending(session.connection)
    }

    /// Runs SQL on the writer connection between transactions. For tests (a full disk is
    /// simulated with `PRAGMA max_page_count`).
    func executeOnWriter(_ sql: String) throws {
        writerLock.lock()
        defer { writerLock.unlock() }
        guard let session = writer else { throw closedError() }
        try session.connection.execute(sql)
    }

    // MARK: - Verifying

    /// `PRAGMA integrity_check` on a reader connection: every page, every index against its
    /// table. SQLite reports damage as errors, never crashes on it, so the file stays readable.
    public func verifyFiles() throws -> FileCheck {
        try checkOpen()
        let session = try pool.acquire()
        var healthy = true
        defer { pool.release(session, healthy: healthy) }
        let statement: Statement
        do {
            statement = try session.connection.cached("PRAGMA integrity_check(100)")
        } catch let error as ReservoirError {
            return FileCheck(problems: ["\(sqliteStore(location)): the check cannot start: \(error.description)"])
        }
        defer { statement.reset() }
        var problems: [String] = []
        do {
            while try statement.step() {
                if case let .text(text) = statement.value(at: 0), text != "ok" {
                    for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("***") {
                        problems.append("\(sqliteStore(location)): \(line)")
                    }
                }
            }
        } catch let error as ReservoirError {
            healthy = false
            problems.append("\(sqliteStore(location)): the check stopped: \(error.description)")
        }
        return FileCheck(problems: problems)
    }

    // MARK: - Closing

    public func close() {
        guard isClosed.set() else { return }
        writerLock.lock()
        if let writer { Checkpointer.uninstall(from: writer.connection) }
        writer = nil
        writerLock.unlock()
        checkpointer.close()
        probeLock.lock()
        probe = nil
        probeLock.unlock()
        pool.close()
    }

    private func checkOpen() throws {
        if isClosed.isSet { throw closedError() }
    }

    private func closedError() -> ReservoirError {
        ReservoirError.closed(store: "sqlite:" + location)
    }
}
