import Foundation
import Reservoir

/// The PostgreSQL backend, `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=…]`, for
/// apps whose processes run on several machines and share one server.
///
///     BackendRegistry.shared.register(.postgres)
///     let store = try Store.open("postgres://app@db.internal/app?schema=chat")
///
/// Written only against Reservoir's public SPI, as a third party would write a backend.
/// One table per record type, one column per field (``ColumnKind``), the change log and
/// NOTIFY for other clients' commits, triggers for plain SQL writers. Docs/Design/PostgreSQL.md
/// describes the layout, the SQL each operator compiles to, and multi-client use.
///
/// Connections: one writer (under `writerLock`), idle readers in a pool, and one listener
/// that receives NOTIFY for ``commitToken()``. A connection found broken is replaced on its
/// next use, so a restarted server is picked up without reopening the store.
public final class PostgresBackend: StorageBackend, @unchecked Sendable {
    // @unchecked: `writer` is used only under `writerLock`, `listener` and its counters only
    // under `listenerLock`; the pool and the catalog cache are `Locked`.

    public let location: String
    public let options: PostgresOptions
    /// What the change log keeps (`retention=`, `retentionage=`, `holdage=`).
    public var historyRetention: HistoryRetention? { options.history }
    public var capabilities: BackendCapabilities { [.persistent, .multiProcess, .nativeQueries, .commitSignal] }

    let server: PostgresServer
    let layout: Layout
    private let writerLock = NSLock()
    private var writer: PGConnection?
    private let idle: Locked<[PGConnection]>
    let cachedCatalog: Locked<Catalog?>
    private let closed = SetOnceFlag()
    let listenerLock = NSLock()
    var listener: PGConnection?
    var token: UInt64 = 0
    var lastSequenceCheck: ContinuousClock.Instant?
    var probedSequence: Int64 = -1
    /// The store's wake-up (``watchCommits(_:)``) and the thread that calls it when the
    /// listener's socket has input: both under `listenerLock`.
    var wake: (@Sendable () -> Void)?
    var listenerThread: PGNotifyThread?
    /// Commits other writers announced (``takeHeardCommits()``), whether nothing else moved the
    /// token since the store last took them, the identity whose announcement channel is listened
    /// on, and the sequences announced lately, whose plain signal follows and is skipped: under
    /// `listenerLock`.
    var heard: [CommitAnnouncement] = []
    var heardIsComplete = false
    var announcedIdentity: UUID?
    var recentlyAnnounced: [UInt64] = []
    /// The store's identity, once a transaction's meta row brought it: it names the channel
    /// commits are announced on (``Layout/announcementChannel(_:)``).
    let knownIdentity = Locked<UUID?>(nil)
    /// The identity's text as the meta row last brought it, with its parse (``learnt(_:)``).
    private let identityText = Locked<(String, UUID)?>(nil)
    /// The writer connection's server process, whose notifications are this store's own.
    let writerPID = Locked<Int32>(0)
    /// Whether the store's tables exist. A store is created by its first write, in that
    /// write's transaction, so a write refused (another application's table in the schema)
    /// leaves the schema as it was; until then reads see an empty store.
    let created = Locked(false)
    /// The server transaction id (`txid_current()`) of the write in progress, under `writerLock`.
    var writerTransaction: Int64 = 0
    /// The server transaction of the last write whose `COMMIT` outcome could not be learnt
    /// (``ReservoirError/Code/commitOutcomeUnknown``); ``commitOutcome(ofTransaction:)`` asks later.
    public var unresolvedCommit: Int64? { unresolved.withLock { $0?.transaction } }
    let unresolved = Locked<PendingCommit?>(nil)

    /// Connects to the server `configuration` names and checks the format of the store's
    /// tables when they exist (the first write creates them). Throws `.cannotOpen` naming the
    /// server and the cause (not running, wrong password, missing database, no permission),
    /// `.invalidConfiguration` for options libpq refuses, `.timeout`, `.corrupt` for a newer format.
    public init(_ configuration: StoreConfiguration) throws {
        let options = try PostgresOptions(configuration)
        self.options = options
        self.server = try PostgresServer(configuration, schema: options.schema)
        self.layout = Layout(schema: options.schema)
        self.location = server.location
        self.idle = Locked([])
        self.cachedCatalog = Locked(nil)
        let writer = try makeWriter()
        try setUp(writer)
        self.writer = writer
    }

    deinit {
        close()
    }

    private func makeWriter() throws -> PGConnection {
        let connection = try connect()
        var settings = "SET reservoir.writer = 'on'; SET lock_timeout = \(options.lockTimeoutMilliseconds)"
        if options.durability != .full { settings += "; SET synchronous_commit = off" }
        try connection.execute(settings)
        writerPID.withLock { $0 = connection.backendPID }
        return connection
    }

    /// A new connection to the server, its calls bounded by ``PostgresOptions/timeout``.
    func connect() throws -> PGConnection {
        try PGConnection(server: server, timeout: options.timeout)
    }

    // MARK: - Transactions

    public func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        writerLock.lock()
        defer { writerLock.unlock() }
        try checkOpen()
        if writer.map({ !$0.isHealthy }) ?? true {
            writer = nil
            writer = try makeWriter()
        }
        guard let connection = writer else { throw closedError() }
        // The server transaction begins with the body's first statement (beginWrite), so a
        // first read rides in the same round trip as BEGIN and the meta row. Until then the
        // transaction holds the newest catalog this store knows, to build that read from.
        let guess = cachedCatalog.withLock { $0 } ?? Catalog(version: -1, tables: [:])
        let transaction = PGWriteTransaction(connection: connection, layout: layout, catalog: guess, sequence: 0) { [unowned self] read in
            try self.beginWrite(read)
        }
        defer { transaction.end() }
        func rollBack() {
            let connection = transaction.connection
            connection.discardPending()
            if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
            if transaction.catalogChanged {
                // DDL rolled back: statements prepared against it must go.
                try? connection.dropPrepared()
                connection.preparedCatalog = -1
            }
        }
        let result: R
        do {
            result = try body(transaction)
        } catch {
            rollBack()
            throw error
        }
        if transaction.begun {
            do {
                // The queued writes and change-log rows, then COMMIT: one round trip.
                try transaction.connection.flush(then: "COMMIT")
            } catch let error as ReservoirError where error.code == .commitOutcomeUnknown {
                // The connection is gone with the answer: ask the server on a new one.
                writer = nil
                try resolveCommit(error, PendingCommit(transaction: writerTransaction, sequence: transaction.sequence, commit: transaction.loggedCommit))
            } catch {
                rollBack()
                throw error
            }
            created.withLock { $0 = true }
        }
        if transaction.catalogChanged {
            let committed = transaction.catalog
            cachedCatalog.withLock { cached in
                if (cached?.version ?? -1) < committed.version { cached = committed }
            }
        }
        return result
    }

    /// Begins the writer's transaction (called by its first statement, under `writerLock`):
    /// `BEGIN` and the meta row `FOR UPDATE`, which takes the write lock. `read`, the
    /// transaction's first statement when it reads, made from catalog version `catalog`, is
    /// sent in the same pipeline; its result is returned when that catalog is still the
    /// store's, and dropped (the caller runs it again) when another commit changed the schema.
    private func beginWrite(_ read: PGWriteTransaction.FirstRead?) throws -> PGWriteTransaction.Start {
        guard var connection = writer else { throw closedError() }
        if let read, read.catalog >= 0, connection.preparedCatalog == read.catalog, created.withLock({ $0 }),
           let answer = try? connection.pipeline([Layout.begin, .prepared(layout.lockMeta, [], binary: false), .prepared(read.sql, read.parameters)]) {
            if answer.results[0] != nil, let meta = answer.results[1] {
                // Begun, with the write lock. A failed read (a statement prepared for a table
                // another client has since changed) is rolled back and begun again below.
                if answer.succeeded, let first = answer.results[2] {
                    writerTransaction = meta.text(0, 3).flatMap { Int64($0) } ?? 0
                    let (position, catalog) = try opened(meta, connection)
                    return .init(connection: connection, position: position, catalog: catalog,
                                 identity: learnt(meta.text(0, 4)),
                                 read: catalog.version == read.catalog ? first : nil)
                }
            } else if let failure = answer.error, connection.isConnected || failure.code == .timeout {
                // BEGIN or the meta row failed (a lock timeout, a dropped schema): reported as
                // the ordinary begin reports it, not waited for twice.
                if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
                throw gone(failure) ?? failure
            }
            // A lost server is found again below, and reconnected.
            if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
        }
        // A call above timed out (preparing the read, say): the bound is spent, no retry.
        if connection.broken { throw connection.timedOut() }
        let (position, catalog, identity): (CommitPosition, Catalog, UUID?)
        do {
            (position, catalog, identity) = try beginCreating(connection)
        } catch let error as ReservoirError where connection.isLost(after: error) {
            // The server restarted since the last write: nothing was sent, so one fresh try.
            writer = nil
            connection = try makeWriter()
            writer = connection
            (position, catalog, identity) = try beginCreating(connection)
        }
        return .init(connection: connection, position: position, catalog: catalog, identity: identity, read: nil)
    }

    /// Starts a transaction and reads the meta row in it (one round trip): the newest
    /// sequence (with its commit's identity) and the catalog at that snapshot. The writer's
    /// `FOR UPDATE` takes the write lock.
    func begin(_ connection: PGConnection, _ command: String, lock: String) throws -> (CommitPosition, Catalog, UUID?) {
        let meta: PGResult
        do {
            // The writer also reads its transaction's id, to ask the server later whether it
            // committed should the connection be lost during COMMIT; a reader, the store's
            // identity (a history read asks for it, and a round trip of its own costs more).
            let more = lock.isEmpty ? ", store_id::text" : ", txid_current(), store_id::text"
            meta = try connection.execute("\(command); SELECT sequence, catalog, commit_id\(more) FROM \(layout.meta)\(lock)")
            if !lock.isEmpty { writerTransaction = meta.text(0, 3).flatMap { Int64($0) } ?? 0 }
        } catch let error as ReservoirError {
            if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
            throw gone(error) ?? error
        }
        let (position, catalog) = try opened(meta, connection)
        return (position, catalog, learnt(meta.text(0, lock.isEmpty ? 3 : 4)))
    }

    /// Keeps the store's identity a meta row brought (`store_id` as text), and returns it.
    /// Parsing a UUID costs more than the rest of a point read's client work, so the text
    /// last parsed is kept with it.
    @discardableResult
    func learnt(_ text: String?) -> UUID? {
        guard let text else { return nil }
        if let (known, identity) = identityText.withLock({ $0 }), known == text { return identity }
        guard let identity = UUID(uuidString: text) else { return nil }
        knownIdentity.withLock { $0 = identity }
        identityText.withLock { $0 = (text, identity) }
        return identity
    }

    /// The sequence and catalog a transaction's meta-row read (`meta`, text results) names;
    /// loads the catalog when it is not the cached one, and drops statements prepared under
    /// another. Rolls the transaction back when that fails.
    func opened(_ meta: PGResult, _ connection: PGConnection) throws -> (CommitPosition, Catalog) {
        let sequence = UInt64(clamping: meta.text(0, 0).flatMap { Int64($0) } ?? 0)
        let commit = meta.text(0, 2).flatMap { Int64($0) }.map { UInt64(bitPattern: $0) } ?? 0
        let version = meta.text(0, 1).flatMap { Int64($0) } ?? 0
        do {
            let catalog = try catalog(version, connection)
            if connection.preparedCatalog != version {
                try connection.dropPrepared()
                connection.preparedCatalog = version
            }
            return (CommitPosition(sequence: sequence, commit: commit), catalog)
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    private func catalog(_ version: Int64, _ connection: PGConnection) throws -> Catalog {
        if let cached = cachedCatalog.withLock({ $0 }), cached.version == version { return cached }
        let loaded = try Catalog.load(connection, layout: layout, version: version)
        cachedCatalog.withLock { cached in
            if (cached?.version ?? -1) < version { cached = loaded }
        }
        return loaded
    }

    /// `.gone` when `error` says the store's tables no longer exist (its schema was dropped).
    func gone(_ error: ReservoirError) -> ReservoirError? {
        guard error.nativeCode == PGFailure.packed("42P01") || error.nativeCode == PGFailure.packed("3F000") else { return nil }
        return ReservoirError(.gone, "\(server.name): the store's tables are gone (was schema \(layout.schema) dropped?); open the store again to create them anew",
                              nativeCode: error.nativeCode, nativeMessage: error.nativeMessage)
    }

    func acquireReader() throws -> PGConnection {
        if let connection = idle.withLock({ $0.popLast() }) { return connection }
        return try freshReader()
    }

    /// Closes the idle readers: called when one of them is found lost, most likely in a server
    /// restart that ended them all (each would otherwise cost a read a failed attempt).
    func dropIdleReaders() {
        idle.withLock { $0.removeAll() }
    }

    /// A new reader connection, outside the pool.
    func freshReader() throws -> PGConnection {
        let connection = try connect()
        try connection.execute("SET lock_timeout = \(options.lockTimeoutMilliseconds)")
        return connection
    }

    func releaseReader(_ connection: PGConnection, healthy: Bool) {
        guard healthy, !closed.isSet else { return }
        idle.withLock { pool in
            if pool.count < options.readers { pool.append(connection) }
        }
    }

    // MARK: - Closing

    public func close() {
        guard closed.set() else { return }
        writerLock.lock()
        writer = nil
        writerLock.unlock()
        listenerLock.lock()
        stopWatchingSocket()
        wake = nil
        listener = nil
        listenerLock.unlock()
        dropIdleReaders()
    }

    func checkOpen() throws {
        if closed.isSet { throw closedError() }
    }

    private func closedError() -> ReservoirError {
        ReservoirError.closed(store: server.location)
    }

    // MARK: - Tools

    /// Drops the store `configuration` names: its schema and everything in it. For tests
    /// and tools; refuses the `public` schema, which holds more than a store.
    public static func dropStore(_ configuration: String) throws {
        let parsed = try StoreConfiguration(configuration)
        let options = try PostgresOptions(parsed)
        let server = try PostgresServer(parsed, schema: options.schema)
        guard options.schema != "public" else {
            throw ReservoirError(.invalidConfiguration, "\(server.name): dropStore drops a whole schema; it will not drop public")
        }
        let connection = try PGConnection(server: server, timeout: options.timeout)
        try connection.execute("DROP SCHEMA IF EXISTS \(Layout.quote(options.schema)) CASCADE")
    }
}

extension BackendFactory {
    /// `postgres://…`: the PostgreSQL backend.
    public static let postgres = BackendFactory(
        scheme: "postgres",
        summary: "postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME&retention=N&retentionage=DURATION&holdage=DURATION&readers=N&durability=normal|full&timeout=SECONDS&LIBPQ-OPTIONS]"
    ) { try PostgresBackend($0) }

    /// `postgresql://…`, the other spelling libpq accepts.
    public static let postgresql = BackendFactory(
        scheme: "postgresql",
        summary: "postgresql://… (as postgres://)"
    ) { try PostgresBackend($0) }
}
