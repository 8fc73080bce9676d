/// The storage-engine SPI: what a backend implements so ``Store`` can run on it.
///
/// Users never call this; they use ``Store``. Backend authors implement it, register a
/// ``BackendFactory`` for their URL scheme, and run `ReservoirConformance` in their tests.
///
/// ## Implementation requirements
/// A backend supplies storage and little else; the core owns decoding, query
/// semantics (``QueryEvaluator``), change sets, fan-out and subscriptions.
/// - ``read(_:)`` runs its body against one consistent snapshot and always releases it,
///   even when the body throws. Readers never wait for the writer.
/// - ``write(_:)`` runs its body in the single write transaction (serialised with every
///   other writer, in this process and in others sharing the store). It commits when the
///   body returns and rolls back, leaving nothing behind, when it throws. When the commit
///   itself fails, it throws and nothing is committed.
/// - Inside a write, reads see the transaction's own writes.
/// - ``WriteTransaction/record(_:)`` persists the change set's entries in the change log
///   *in the same transaction*; ``ReadTransaction/lastSequence()`` reports the highest
///   sequence committed, whichever process committed it. In-process-only backends may keep
///   the log in memory.
/// - ``commitToken()`` is cheap and changes whenever any process commits.
/// - A backend whose files can be deleted or replaced under it checks, in ``commitToken()``
///   (probed every poll) and when a write begins, that the files it opened are still the
///   ones at its location, and throws `.gone` otherwise: ``Store`` then ends every live
///   subscription with that error instead of silently watching a file nobody writes.
/// - Errors are ``ReservoirError``s carrying the engine's native code and message, and
///   naming the store's location.
/// - All methods may be called from any thread.
public protocol StorageBackend: AnyObject, Sendable {
    /// What this backend can do; conformance cases needing more are skipped visibly.
    var capabilities: BackendCapabilities { get }

    /// Where the data lives, for messages and tools (a path, or "memory").
    var location: String { get }

    /// Runs `body` against a consistent read snapshot.
    func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R

    /// Runs `body` in the write transaction; commits when it returns, rolls back when it throws.
    func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R

    /// A number that changes whenever any process commits a write (SQLite's
    /// `data_version`, LMDB's last transaction id). Probed to find external commits.
    func commitToken() throws -> UInt64

    /// Starts calling `wake` soon after another process (or another `Store` on the same
    /// location) may have committed, so ``Store`` probes ``commitToken()`` at once instead of
    /// on a timer. Returns nil when the backend has no such signal (the default): the store
    /// then probes every 50 ms. A signal may fire spuriously (own commits, unrelated writes)
    /// and may fire a little before the commit is visible; the store handles both. It must
    /// never stay silent after a commit it could see, except where Backends.md says so; the
    /// store's slow safety-net probe covers those cases. ``FileChangeWatch`` serves file-based
    /// backends.
    func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)?

    /// Releases the engine's resources. Later calls throw `.closed`.
    func close()

    /// The engine's own check of its files, for ``Store/verify()``: damage found, and
    /// whether reading through the backend is still safe. The default finds nothing.
    /// It must not crash on damage; it throws only when it cannot run at all (`.closed`).
    func verifyFiles() throws -> FileCheck
}

extension StorageBackend {
    public func verifyFiles() throws -> FileCheck { FileCheck() }
}

/// What a backend supports. The conformance suite skips, visibly, the cases that
/// need a capability the backend lacks.
public struct BackendCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The capabilities' bits.
    public let rawValue: Int
    /// Capabilities from their bits; use the static members.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Data survives closing the store and reopening it at the same location.
    public static let persistent = BackendCapabilities(rawValue: 1 << 0)
    /// Several processes (or several `Store`s in one process) may open the same location;
    /// commits by one reach the others' subscriptions through the change log.
    public static let multiProcess = BackendCapabilities(rawValue: 1 << 1)
    /// The backend compiles predicates and sorts natively instead of using ``QueryEvaluator``.
    public static let nativeQueries = BackendCapabilities(rawValue: 1 << 2)
    /// ``StorageBackend/watchCommits(_:)`` wakes the store when another process commits, so
    /// those commits arrive within about a millisecond instead of at the next 50 ms probe.
    public static let commitSignal = BackendCapabilities(rawValue: 1 << 3)
    /// The backend opens `?mode=readonly` (and files it may not write) for reading and
    /// observing, refusing writes with `.readOnly`.
    public static let readOnlyOpening = BackendCapabilities(rawValue: 1 << 4)

    /// The capabilities' names, comma-separated, or "none".
    public var description: String {
        var names: [String] = []
        if contains(.persistent) { names.append("persistent") }
        if contains(.multiProcess) { names.append("multi-process") }
        if contains(.nativeQueries) { names.append("native queries") }
        if contains(.commitSignal) { names.append("commit signal") }
        if contains(.readOnlyOpening) { names.append("read-only opening") }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}

/// A consistent view of the store, valid only inside the ``StorageBackend/read(_:)``
/// or ``StorageBackend/write(_:)`` body it was passed to.
public protocol ReadTransaction {
    /// The row stored under `id` in the entity named `entity`, or nil.
    func row(_ entity: String, id: Value) throws -> Row?

    /// Exactly the rows `QueryEvaluator.evaluate(query, over: allRowsOfTheEntity)` returns,
    /// in that order. An entity never written to has no rows.
    func fetch(_ query: Query) throws -> [Row]

    /// Calls `body` with each row `fetch(query)` returns, in the same order, without
    /// collecting them: ``Store`` decodes records this way. A backend may hand `body` one
    /// `Row` refilled in place for each row (see ``Row/withUnsafeMutableValues(_:)``); `Row` is a value,
    /// so a body that keeps a row keeps an unchanging copy. `body` must not use the
    /// transaction (the backend may be mid-scan). When `body` throws, the fetch stops and
    /// rethrows.
    func fetch(_ query: Query, each body: (Row) throws -> Void) throws

    /// ``fetch(_:each:)``, first telling `expecting` how many rows will follow when the
    /// backend knows before the first one, so the caller can size its storage once instead
    /// of growing it (a 100,000-record array grown by doubling spends more time copying and
    /// faulting in fresh pages than a fast backend spends reading). A backend that calls
    /// `expecting` calls it once, before `body`, with exactly the number of rows `body` then
    /// receives; one that learns the count only by reading (a SQLite statement) never calls it.
    func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws

    /// The number of rows `fetch(query)` would return.
    func count(_ query: Query) throws -> Int

    /// Every entity this store holds rows for, as it was last written.
    func entities() throws -> [EntityDescription]

    /// The sequence number of the newest change set committed (0 when none).
    func lastSequence() throws -> UInt64

    /// Change-log entries with a sequence above `sequence`, in sequence order, at most `limit`
    /// change sets' worth. Backends keep a bounded history; entries older than it are gone.
    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry]
}

extension StorageBackend {
    /// No commit signal: the store probes ``commitToken()`` every 50 ms instead.
    public func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)? { nil }
}

/// What ``StorageBackend/watchCommits(_:)`` returns: the running signal, stopped by ``cancel()``.
public protocol CommitWatch: AnyObject, Sendable {
    /// Stops calling the wake closure; after it returns, no new call starts.
    func cancel()
}

extension ReadTransaction {
    /// The number of rows `query` selects; the default counts what ``fetch(_:)`` returns.
    public func count(_ query: Query) throws -> Int {
        try fetch(query).count
    }

    /// The rows `query` selects, handed to `body` one at a time; the default walks ``fetch(_:)``.
    public func fetch(_ query: Query, each body: (Row) throws -> Void) throws {
        for row in try fetch(query) { try body(row) }
    }

    /// The rows `query` selects, one at a time; the default never calls `expecting`, as it cannot know the count first.
    public func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        try fetch(query, each: body)
    }
}

/// The write transaction: a ``ReadTransaction`` that also sees its own writes.
public protocol WriteTransaction: ReadTransaction {
    /// Stores `row` under `id`, inserting or replacing. Creates the entity's storage
    /// (table, named database, indexes, new columns) on first use.
    func put(_ entity: EntityDescription, id: Value, row: Row) throws

    /// Stores `row` under `id` only when no row has that id. Returns false, writing
    /// nothing, when one exists. Engines that can fail an insert on an existing key
    /// (SQLite's primary-key constraint, LMDB's `MDB_NOOVERWRITE`) save the read the
    /// default implementation makes.
    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool

    /// Removes the row stored under `id`, if any.
    func delete(_ entity: EntityDescription, id: Value) throws

    /// Appends `changeSet`'s entries to the persisted change log, in this transaction.
    /// Called at most once, last, and only when the transaction changed something.
    func record(_ changeSet: ChangeSet) throws
}

extension WriteTransaction {
    /// Stores `row` when no row has `id`, returning false otherwise; the default reads, then puts.
    public func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        if try self.row(entity.name, id: id) != nil { return false }
        try put(entity, id: id, row: row)
        return true
    }
}
