import Foundation

/// A store of records on one backend: the type apps use.
///
///     let store = try Store.open("sqlite:./app.sqlite")      // or "memory:", "lmdb:./app.lmdb"
///     try store.write { tx in
///         try tx.insert(Todo(id: UUID(), title: "Buy milk", done: false, priority: 2))
///     }
///     let open = try store.fetch(FetchRequest<Todo>(where: \.done == false,
///                                                   sortBy: [.descending(\.priority)]))
///
/// `Store` is thread-safe. Writes are serialised and atomic: an error thrown inside
/// `write` leaves nothing behind. Reads see a consistent snapshot and never wait for a
/// writer. Each committed write that changed something publishes one ``ChangeSet`` on
/// ``changes`` before `write` returns.
public final class Store: Sendable {
    /// The backend the store runs on.
    public let backend: any StorageBackend
    /// The configuration the store was opened with, if it was opened from one.
    public let configuration: StoreConfiguration?

    let hub: ChangeHub
    let writeLock: WriteLock
    let poller: CommitPoller
    /// Set by `close()`. The store answers `.closed` itself, in the same words on every
    /// backend; backends keep their own gate for calls already in flight when it is set.
    let isClosed = SetOnceFlag()
    /// Which record types' folded shadow columns this store has checked or refolded.
    @usableFromInline let shadowCheck = ShadowCheck()
    /// Refuses writes once another process migrated the store past the app's migrations.
    let schemaGuard = SchemaGuard()
    /// The history clock as this store last saw it (``HistoryRetention``).
    let historyClock = Locked(HistoryClock.Local())

    /// Opens the store a configuration string names: `memory:`, `sqlite:PATH`, `lmdb:PATH`,
    /// or any scheme registered in `registry`. Throws `.invalidConfiguration` naming the
    /// string and the accepted schemes when the string is malformed or the scheme unknown.
    public static func open(_ configuration: String, registry: BackendRegistry = .shared) throws -> Store {
        let parsed = try StoreConfiguration(configuration)
        return try Store(backend: registry.makeBackend(parsed), configuration: parsed)
    }

    /// A store on a backend made by hand.
    /// - Parameters:
    ///   - backend: the opened backend; the store closes it when it closes.
    ///   - configuration: the configuration it was opened from, named in error messages.
    ///   - pollInterval: how often a multi-process backend is probed for commits by other
    ///     processes. By default every 50 ms, or every second as a safety net when the
    ///     backend has a commit signal (``StorageBackend/watchCommits(_:)``), which then
    ///     delivers other processes' commits within about a millisecond.
    ///   - usesCommitSignal: false leaves the commit signal off, so only the timer (and
    ///     ``pollExternalChanges()``) finds other processes' commits: for tests and tools
    ///     that want a store to fall behind.
    public init(backend: any StorageBackend, configuration: StoreConfiguration? = nil, pollInterval: Duration? = nil,
                usesCommitSignal: Bool = true) throws {
        self.backend = backend
        self.configuration = configuration
        let (position, identity) = try backend.read { (try $0.lastCommit(), try $0.storeIdentity()) }
        self.hub = ChangeHub(after: position, identity: identity)
        self.writeLock = WriteLock()
        self.poller = CommitPoller()
        if backend.capabilities.contains(.multiProcess) {
            startWatching(every: pollInterval, usesCommitSignal: usesCommitSignal)
        }
    }

    deinit {
        poller.stop()
    }

    /// What the backend supports.
    public var capabilities: BackendCapabilities { backend.capabilities }

    /// Stops observing and releases the backend. Later calls throw `.closed`.
    ///
    /// Closing ends every subscription and live object on the store exactly once, on every
    /// backend: change sets already committed are delivered first, then every publisher whose
    /// failure type is `any Error` (differences, objects, results changes, sections, counts,
    /// record and type changes) fails with `.closed`, ``changeSets`` (which cannot fail)
    /// finishes, the async sequences built on them end the same way, and ``LiveQuery``,
    /// ``LiveCount`` and ``LiveSections`` set their `error` to `.closed` and keep their last
    /// contents. A subscription made after `close()` ends the same way at once.
    public func close() {
        guard isClosed.set() else { return }
        poller.stop()
        writeLock.withLock { backend.close() }
        // Whatever was committed reaches its subscribers before they hear the store closed.
        hub.waitUntilDelivered(through: hub.lastTicket)
        hub.fail(ReservoirError.closed(store: configuration?.redacted ?? "\(backend.location)"))
    }

    /// Throws `.closed`, naming the store, once `close()` has been called.
    @usableFromInline
    func checkOpen() throws {
        if isClosed.isSet {
            throw ReservoirError.closed(store: configuration?.redacted ?? "\(backend.location)")
        }
    }

    // MARK: - Reading

    /// Runs `body` against a consistent snapshot.
    public func read<R>(_ body: (Snapshot) throws -> R) throws -> R {
        try checkOpen()
        do {
            return try backend.read { reader in
                let snapshot = Snapshot(reader: reader, shadowCheck: shadowCheck)
                defer { snapshot.invalidate() }
                return try body(snapshot)
            }
        } catch let error as ReservoirError {
            throw named(error)
        }
    }

    /// `error`, naming this store if it does not yet.
    @usableFromInline
    func named(_ error: ReservoirError) -> ReservoirError {
        error.naming(store: configuration?.redacted ?? "\(backend.location)", location: backend.location)
    }

    /// The records `request` selects, in its order.
    // One backend call without a snapshot (``StorageBackend/fetch(_:expecting:each:)``, whose
    // default is a read transaction), unless the shadow columns must be checked first.
    @inlinable
    public func fetch<T: Storable>(_ request: FetchRequest<T>) throws -> [T] {
        try readAlone(request, inSnapshot: { try $0.fetch(request) }) { query in
            try RecordCoding.records(T.self, fetch: { try backend.fetch(query, expecting: $0, each: $1) },
                                     scan: { try backend.scan(query, expecting: $0, rows: $1, readers: $2) })
        }
    }

    /// Every record of a type, in id order.
    @inlinable
    public func fetch<T: Storable>(_ type: T.Type) throws -> [T] {
        try fetch(FetchRequest<T>())
    }

    /// The number of records `request` selects.
    // One backend call without a snapshot (``StorageBackend/count(_:)``), as `fetch`.
    @inlinable
    public func count<T: Storable>(_ request: FetchRequest<T>) throws -> Int {
        try readAlone(request, inSnapshot: { try $0.count(request) }) { try backend.count($0) }
    }

    /// `alone` with `request`'s query: a read of its own, through the backend, outside a
    /// snapshot; `inSnapshot` instead when the shadow columns must be checked first (a probe
    /// and the read in one snapshot). Errors name the store.
    @inlinable
    func readAlone<T: Storable, R>(_ request: FetchRequest<T>, inSnapshot: (Snapshot) throws -> R,
                                   alone: (Query) throws -> R) throws -> R {
        try checkOpen()
        do {
            let query = try request.query()
            if shadowCheck.needsProbe(T.self, for: query) { return try read(inSnapshot) }
            return try alone(query)
        } catch let error as ReservoirError {
            throw named(error)
        }
    }

    /// The record with this id, or nil.
    // Inlinable, so it is specialized for the caller's record type, and without a snapshot:
    // one backend call (``StorageBackend/row(_:id:)``, whose default is a read transaction).
    @inlinable
    public func get<T: Storable>(_ type: T.Type, id: T.ID) throws -> T? {
        try checkOpen()
        do {
            let schema = T.schema
            try schema.validate()
            var record: T?
            _ = try backend.withRow(schema.name, id: id.toValue()) { record = try RecordCoding.decode(T.self, from: $0) }
            return record
        } catch let error as ReservoirError {
            throw named(error)
        }
    }

    /// The records with these ids, in the order of `ids`, leaving out ids with no record.
    public func get<T: Storable, IDs: Sequence>(_ type: T.Type, ids: IDs) throws -> [T] where IDs.Element == T.ID {
        try read { try $0.get(type, ids: ids) }
    }

    // MARK: - Writing

    /// Runs `body` in a write transaction, committing when it returns and rolling back,
    /// with nothing left behind, when it throws. Writes are serialised. Starting a write
    /// inside another write's closure on the same store throws `.misuse`.
    @discardableResult
    public func write<R>(_ body: (Transaction) throws -> R) throws -> R {
        try write(body, committing: nil)
    }

    /// ``write(_:)``, telling `committing` the change set it committed (if it changed any
    /// record) before any observer hears of it: how ``Sync`` knows its own commits from others'.
    func write<R>(_ body: (Transaction) throws -> R, committing: ((ChangeSet) -> Void)?) throws -> R {
        // The closures return `R` alone and hand the rest out through variables: a tuple with
        // a generic element, such as `(R, ChangeSet?)`, has its type metadata built at run
        // time on every call (four lookups, about 1,300 instructions a commit).
        var committed: ChangeSet?
        var base = CommitPosition.start
        var published: UInt64?
        let result: R
        try checkOpen()
        do {
            if let refusal = schemaGuard.refusal { throw refusal }
            result = try writeLock.withWriter { () -> R in
                let result = try backend.write { writer -> R in
                    let transaction = Transaction(writer: writer, shadowCheck: shadowCheck)
                    defer { transaction.invalidate() }
                    let result = try body(transaction)
                    base = try writer.lastCommit()
                    // Others committed since this store last looked: one may have migrated it.
                    if !base.isSameCommit(as: hub.lastPosition) { try schemaGuard.check(writer) }
                    if let changeSet = transaction.makeChangeSet(sequence: base.sequence + 1) {
                        try writer.record(changeSet)
                        if let retention = backend.historyRetention { try keepHistory(after: changeSet.sequence, retention, writer) }
                        committed = changeSet
                    }
                    return result
                }
                guard let changeSet = committed else { return result }
                if !base.isSameCommit(as: hub.lastPosition) {
                    // Another process committed in between: announce its change sets first.
                    // (Or the history was rewound: announce that, so nothing is taken as seen.)
                    // When the log cannot be read now (a server failing under the write), the
                    // stretch is announced as unknown, so observers re-read: skipping it would
                    // lose those commits for them for good.
                    do {
                        try enqueueExternalChanges(through: base)
                    } catch {
                        hub.enqueue(ChangeSet(sequence: base.sequence, entities: [], isExternal: true, isComplete: false, commit: base.commit))
                    }
                }
                if hub.identity == nil, base.sequence == 0 {
                    // A store its first write created (PostgreSQL's) has its identity now.
                    hub.identity = try? backend.read { try $0.storeIdentity() }
                }
                committing?(changeSet)
                hub.enqueue(changeSet)
                published = hub.lastTicket
                poller.noteOwnCommit()
                return result
            }
        } catch let error as ReservoirError {
            if error.code == .gone || error.code == .unknownSchemaVersion { stop(error) }
            throw named(error)
        }
        if let published { hub.deliver(through: published) }
        return result
    }

    // MARK: - Async

    /// `read` off the caller's thread, for async code.
    public func read<R: Sendable>(_ body: @escaping @Sendable (Snapshot) throws -> R) async throws -> R {
        try await runDetached { try self.read(body) }
    }

    /// `write` off the caller's thread, for async code.
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> R) async throws -> R {
        try await runDetached { try self.write(body) }
    }

    private func runDetached<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}
