import CLMDB
import Foundation
import Reservoir

/// The LMDB backend, `lmdb:PATH`: an LMDB environment directory shared safely by
/// several processes.
///
///     BackendRegistry.shared.register(.lmdb)
///     let store = try Store.open("lmdb:./app.lmdb?durability=full")
///
/// Each entity is a named database (encoded id → compact binary row), each indexed field
/// another (encoded value, then id), beside a change log and metadata; keys use an
/// order-preserving encoding so LMDB's byte order is the contract's value order. Queries
/// are narrowed by indexes and answered with ``QueryEvaluator``. The map grows by itself
/// when full. See Docs/Design/LMDB.md for layout, durability and limits.
public final class LMDBBackend: StorageBackend {
    let environment: LMDBEnvironment
    private let isClosed = SetOnceFlag()
    /// Whether writes are refused (`mode=readonly`, or files this process may not write).
    public var isReadOnly: Bool { readOnly || environment.options.readOnly }
    private let readOnly: Bool
    /// What the change log keeps (`retention=`, `retentionage=`, `holdage=`): this store's own
    /// options, even when it shares the environment with another store in the process.
    public let historyRetention: HistoryRetention?

    /// Opens (creating it when its parent directory exists) the environment at `path`.
    public init(path: String, options: LMDBOptions = LMDBOptions()) throws {
        environment = try LMDBEnvironment.acquire(path: path, options: options)
        // The environment may be shared with a writable store in this process; this one stays read-only.
        readOnly = options.readOnly
        historyRetention = options.history
    }

    /// Opens the environment an `lmdb:` configuration names.
    public convenience init(configuration: StoreConfiguration) throws {
        guard configuration.scheme == "lmdb" else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.string)\" is not an lmdb: configuration")
        }
        try self.init(path: configuration.location, options: LMDBOptions(configuration))
    }

    deinit { close() }

    public var capabilities: BackendCapabilities { [.persistent, .multiProcess, .commitSignal, .readOnlyOpening] }

    /// The environment directory's canonical path.
    public var location: String { environment.path }

    /// The current size of the memory map, in bytes.
    public var mapSize: Int { environment.mapSize }

    public func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        var transaction = try LMDBTransaction.beginRead(in: environment)
        defer {
            // Kept for a later read (with its idle LMDB transaction, ``LMDBEnvironment/IdleReader``)
            // only when `body` kept no reference to it.
            let reusable = isKnownUniquelyReferenced(&transaction)
            transaction.end(reusable: reusable)
        }
        return try body(transaction)
    }

    /// The row in a read transaction of its own, lent from the transaction's reused row.
    /// ``read(_:)``'s work without its existential transaction and closure: `body` sees only
    /// the row, so nothing but this call can hold the transaction, and it is always kept for
    /// the next read.
    public func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool {
        try checkOpen()
        let transaction = try LMDBTransaction.beginRead(in: environment)
        defer { transaction.end(reusable: true) }
        return try transaction.withRow(entity, id: id, body)
    }

    public func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        try checkWritable()
        return try environment.withWriterLocks {
            let transaction = try LMDBTransaction(writingIn: environment)
            defer { transaction.end() }
            let result = try body(transaction)
            try transaction.commit()
            return result
        }
    }

    /// A write that keeps no operation to replay (a migration's version): when the map fills,
    /// the transaction is aborted, the map doubled and `body` run again from the start in a new
    /// write transaction, the writer locks held throughout. The map is first grown, when no other
    /// transaction of this process is live, to four times the pages in use
    /// (``LMDBEnvironment/growMapAhead()``), so that a write copying every page rarely fills it.
    public func rerunnableWrite<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        try checkWritable()
        return try environment.withWriterLocks {
            try environment.growMapAhead()
            while true {
                let transaction = try LMDBTransaction(writingIn: environment, rerunnable: true)
                defer { transaction.end() }
                do {
                    let result = try body(transaction)
                    try transaction.commit()
                    return result
                } catch where transaction.replay.mapFilled {
                    // Whatever `body` made of the error: the map filled, so every later call failed.
                    transaction.end()
                    try environment.growMap()
                }
            }
        }
    }

    public func commitToken() throws -> UInt64 {
        try checkOpen()
        return try environment.lastTransactionID()
    }

    /// Every commit writes its pages and then its meta page into data.mdb with `pwrite`
    /// (this backend never uses `MDB_WRITEMAP`), which wakes the store.
    public func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)? {
        FileChangeWatch.watching([environment.path + "/data.mdb"], wake: wake)
    }

    /// Every page of every database read with `pread` and checked (``PageCheck``): LMDB
    /// itself may crash on a damaged page, so when any is found the store is not readable.
    public func verifyFiles() throws -> FileCheck {
        try checkOpen()
        try environment.checkNotTruncated()
        let problems = try environment.pageProblems()
        return FileCheck(problems: problems.map { "\(lmdbStore(environment.path)): data.mdb: " + $0 }, readable: problems.isEmpty)
    }

    public func close() {
        guard isClosed.set() else { return }
        environment.release()
    }

    private func checkWritable() throws {
        try checkOpen()
        if readOnly || environment.options.readOnly {
            throw StoreConfiguration.readOnlyError(lmdbStore(environment.path), explicitly: !environment.readOnlyByPermission)
        }
    }

    private func checkOpen() throws {
        if isClosed.isSet {
            throw ReservoirError.closed(store: "lmdb:" + environment.path)
        }
    }
}

extension BackendFactory {
    /// The factory for `lmdb:PATH[?durability=none|normal|full&mapsize=SIZE&maxmapsize=SIZE&maxreaders=N&maxdbs=N&retention=N&retentionage=DURATION&holdage=DURATION&mode=readonly]`.
    public static let lmdb = BackendFactory(
        scheme: "lmdb",
        summary: "lmdb:PATH[?durability=none|normal|full&mapsize=SIZE&maxmapsize=SIZE&maxreaders=N&maxdbs=N&retention=N&retentionage=DURATION&holdage=DURATION&mode=readonly]"
    ) { configuration in
        try LMDBBackend(configuration: configuration)
    }
}
