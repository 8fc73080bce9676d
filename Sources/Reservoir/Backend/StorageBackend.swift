import Foundation

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
///   *in the same transaction*, with its commit identity (``ChangeSet/commit``); afterwards
///   ``ReadTransaction/lastSequence()`` returns the change set's sequence (and
///   ``ReadTransaction/lastCommit()`` its position), and it reports the highest sequence
///   committed, whichever process committed it. Every entry ``ReadTransaction/changeLog(after:limit:)``
///   returns carries its change set's identity; change sets a backend numbers itself (plain
///   SQL) get a random identity of the backend's making. A lost commit's identity is never
///   reused, so a reused sequence number is told apart (``CommitPosition``). A backend that is neither persistent nor multi-process may keep no log; a
///   persistent one keeps it, and the sequence, across reopening.
/// - A transaction is valid only inside the closure it was passed to: every call on it
///   afterwards throws `.misuse`.
/// - ``commitToken()`` is required of every backend: cheap while nothing changed (it is probed
///   often), and changes whenever any process commits, never before the commit is visible to
///   a new ``read(_:)``. After ``close()``, ``read(_:)``, ``write(_:)`` and ``commitToken()`` throw `.closed`.
/// - A persistent backend without ``BackendCapabilities/multiProcess`` refuses a second opener
///   of a location that is open (in this process or another) with `.busy`, and lets one in
///   once the first closed.
/// - A persistent backend keeps values bit for bit: reals by bit pattern (−0.0 stays −0.0),
///   text by its UTF-8 bytes (never normalised).
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

    /// Runs `body` in the write transaction as ``write(_:)`` does, but the backend may roll a run
    /// back and run `body` again from the start, in a new write transaction, when it ran out of
    /// room it can make (LMDB's map): only the last run commits. A backend that would otherwise
    /// keep each operation to redo it after making room (LMDB keeps every row it wrote) can keep
    /// nothing. `body` must therefore be a function of the committed data it reads, with no effect
    /// outside the transaction that running it twice would double. ``Store/migrate(_:)`` runs each
    /// version this way; the default is ``write(_:)``, which runs `body` once.
    func rerunnableWrite<R>(_ body: (any WriteTransaction) throws -> R) throws -> R

    /// The row stored under `id` in the entity named `entity`, or nil: exactly what
    /// `read { try $0.row(entity, id: id) }` returns, which is the default. ``Store/get(_:id:)``
    /// asks this once per point read, so a backend may answer it without setting up a whole
    /// read transaction, as long as the answer is one committed state's (one lookup, one
    /// statement) and ``read(_:)``'s other checks (closed, files gone or damaged) still apply.
    func row(_ entity: String, id: Value) throws -> Row?

    /// Runs `query` in a read transaction of its own: exactly what
    /// `read { try $0.fetch(query, expecting: expecting, each: body) }` does, which is the
    /// default. ``Store/fetch(_:)`` asks this for a fetch outside a snapshot, so a backend may
    /// send the whole transaction at once (PostgreSQL: its start, the `SELECT` and its end in one
    /// segment), as long as what it reads is one committed state and ``read(_:)``'s other checks
    /// still apply. `expecting` and `body` are called as ``ReadTransaction/fetch(_:expecting:each:)``
    /// calls them, and at most once for each row: a backend that falls back to ``read(_:)``
    /// does so before calling either.
    func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws

    /// ``fetch(_:expecting:each:)``, handing each row to `rows` or lending it to `readers` as
    /// ``ReadTransaction/scan(_:expecting:rows:readers:)`` does: how ``Store/fetch(_:)`` decodes
    /// records. The default passes `rows` to this backend's `fetch(_:expecting:each:)`, so a
    /// backend that sends its read whole keeps doing so; one whose transactions read columns in
    /// place answers with `read { try $0.scan(query, expecting: expecting, rows: rows, readers: readers) }`.
    func scan(_ query: Query, expecting: (Int) -> Void, rows: (Row) throws -> Void,
              readers: (borrowing RowReader) throws -> Void) throws

    /// The number of rows `query` selects, in a read transaction of its own: exactly what
    /// `read { try $0.count(query) }` returns, which is the default. ``Store/count(_:)`` asks
    /// this, with the same freedom as ``fetch(_:expecting:each:)``.
    func count(_ query: Query) throws -> Int

    /// Calls `body` with the row ``row(_:id:)`` returns and returns true, or returns false when
    /// there is none, with the same freedom from a whole read transaction. As
    /// ``ReadTransaction/withRow(_:id:_:)``, a backend may lend `body` a row it refills in
    /// place; `body` must not call the backend. The default calls ``row(_:id:)``.
    func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool

    /// A number that changes whenever any process commits a write (SQLite's
    /// `data_version`, LMDB's last transaction id). Probed to find external commits.
    ///
    /// Not necessarily read-only: when the token moved, a backend may first finish work that
    /// must be done before those commits can be read from its change log, as SQLite numbers
    /// the log rows plain-SQL clients left unnumbered, in a short write transaction. This is
    /// the one call made between another process's commit and the log's read, so such work
    /// has no other place; while the token stays put the probe stays a cheap read.
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

    /// The commits other writers announced with their change sets (``CommitAnnouncement``)
    /// since the last call, and whether they are everything that moved ``commitToken()`` since
    /// then. ``Store`` asks once the token moved, before reading the change log: when the
    /// announcements are complete and follow on from the last commit it published, it publishes
    /// them and reads nothing. The default, ``HeardCommits/unknown``, always has it read.
    func takeHeardCommits() -> HeardCommits

    /// Releases the engine's resources; idempotent. Later calls throw `.closed`. Inside a
    /// backend class this name hides the C library's `close(_:)`: call that `Glibc.close`.
    func close()

    /// The engine's own check of its files, for ``Store/verify()``: damage found, and
    /// whether reading through the backend is still safe. The default finds nothing.
    /// It must not crash on damage; it throws only when it cannot run at all (`.closed`).
    func verifyFiles() throws -> FileCheck

    /// How much history the change log keeps, parsed from the store's options with
    /// ``StoreConfiguration/historyRetention(defaultCount:)``. When given, ``Store`` decides what
    /// to drop (by count, by age, and consumers' holds) and calls
    /// ``WriteTransaction/trimChangeLog(through:)``; the backend then never trims on its own.
    /// Nil, the default: the backend trims by itself, and ``Store/retainHistory(for:from:)``
    /// is refused as not supported.
    var historyRetention: HistoryRetention? { get }
}

extension StorageBackend {
    public func verifyFiles() throws -> FileCheck { FileCheck() }

    public var historyRetention: HistoryRetention? { nil }

    /// Reads the row in a read transaction of its own.
    public func row(_ entity: String, id: Value) throws -> Row? {
        try read { try $0.row(entity, id: id) }
    }

    /// Calls `body` with ``row(_:id:)``'s row.
    public func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool {
        guard let row = try row(entity, id: id) else { return false }
        try body(row)
        return true
    }

    /// Runs `query` in a read transaction of its own.
    public func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        try read { try $0.fetch(query, expecting: expecting, each: body) }
    }

    /// Passes each row to `rows`, through ``fetch(_:expecting:each:)``.
    public func scan(_ query: Query, expecting: (Int) -> Void, rows: (Row) throws -> Void,
                     readers: (borrowing RowReader) throws -> Void) throws {
        try fetch(query, expecting: expecting, each: rows)
    }

    /// Counts `query`'s rows in a read transaction of its own.
    public func count(_ query: Query) throws -> Int {
        try read { try $0.count(query) }
    }

    /// Runs `body` once, through ``write(_:)``.
    public func rerunnableWrite<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        try write(body)
    }
}

extension StorageBackend {
    /// No commit signal: the store probes ``commitToken()`` every 50 ms instead.
    public func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)? { nil }

    public func takeHeardCommits() -> HeardCommits { .unknown }
}

extension ReadTransaction {
    public func metadata(_ key: String) throws -> Data? { nil }

    public func lastCommit() throws -> CommitPosition {
        let sequence = try lastSequence()
        guard sequence > 0 else { return .start }
        return try commit(at: sequence) ?? CommitPosition(sequence: sequence, commit: 0)
    }

    public func storeIdentity() throws -> UUID? { nil }

    public func commit(at sequence: UInt64) throws -> CommitPosition? {
        guard sequence > 0 else { return .start }
        guard let first = try changeLog(after: sequence - 1, limit: 1).first, first.sequence == sequence else { return nil }
        return CommitPosition(sequence: sequence, commit: first.commit)
    }

    /// Calls `body` with ``row(_:id:)``'s row.
    public func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool {
        guard let row = try row(entity, id: id) else { return false }
        try body(row)
        return true
    }

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

    /// Passes each row to `rows`, through ``fetch(_:expecting:each:)``.
    public func scan(_ query: Query, expecting: (Int) -> Void, rows: (Row) throws -> Void,
                     readers: (borrowing RowReader) throws -> Void) throws {
        try fetch(query, expecting: expecting, each: rows)
    }
}

extension WriteTransaction {
    public func setMetadata(_ key: String, to value: Data?) throws {
        throw ReservoirError(.misuse, "this backend keeps no metadata, so it cannot keep \"\(key)\" (history holds and retention by age need WriteTransaction.setMetadata(_:to:))")
    }

    public func trimChangeLog(through sequence: UInt64) throws {}

    /// Stores `row` when no row has `id`, returning false otherwise; the default reads, then puts.
    public func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        if try self.row(entity.name, id: id) != nil { return false }
        try put(entity, id: id, row: row)
        return true
    }
}
