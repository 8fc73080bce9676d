import Foundation
import OpenCombineShim

/// A local store kept in step with a remote store, both ways, built on both stores' history
/// (Backends.md, "Sync"). The app reads, writes and observes the local store as usual, online
/// or offline; ``sync()`` sends the local changes to the remote and brings the remote's commits
/// back as ordinary local commits.
///
///     let sync = try Sync(local: store, remote: "postgres://app@db/app", shapes: [SyncShape(Todo.self)])
///     try sync.sync()          // push, then pull, once; or:
///     sync.start()             // and follow both stores live, until stop()
///
/// **Push.** The outbox is the local store itself: its history after the replica's pushed token
/// (held for the replica, so retention keeps it) names the records that may have changed, and
/// each record's base (the server's row as the replica last saw it, kept in the local store's
/// metadata in the same transactions) says which columns did. A local write, this library's or
/// another process's, needs nothing of the sync to be pushed later. A push takes the changed
/// records as one batch (kept in the local store until the server's answer is applied), applies
/// them on the server in one transaction that also records the batch's name, so a batch sent
/// again after a crash or a lost connection is applied once, then applies the answer locally.
/// A store's first push uploads the records it already holds.
///
/// **Conflicts, one rule:** last writer wins field by field in the server's order: a pushed
/// change overwrites the columns it changed, and only those (``SyncConflict/fieldwise``); a
/// delete wins over a concurrent update. An app's ``SyncResolver`` may decide instead, and a
/// change the server does not take is reported (``SyncEvent/pushed(changes:rejected:token:)``)
/// with the local record returned to the server's state.
///
/// **Pull.** Each pull reads the remote's change sets after the replica's token and the current
/// rows of the records they touched in one remote snapshot, and applies them in one local
/// write together with the new token, page by page; local changes not yet pushed stay, laid
/// over the server's rows. A replica's first pull, a change of shapes, and a remote history
/// that no longer reaches back to its token make it read its shapes whole instead, and say so
/// (``SyncEvent/resynced(reason:records:token:)``): it never silently diverges.
public final class Sync: @unchecked Sendable {
    // @unchecked: mutable state is in locks (`state`, `identity`, `following` …); pushes and
    // pulls are one at a time (`cycling`).
    public let local: Store
    /// The remote store, once reached: a replica made from a configuration string opens it at
    /// its first push or pull (and tries again at each one until it is reached), so an app can
    /// make its replica, write and observe while offline.
    public var remote: Store? { remoteStore.withLock { $0 } }
    private let remoteStore: Locked<Store?>
    private let remoteConfiguration: (text: String, registry: BackendRegistry, migrations: Migrations?)?
    /// The shapes mirrored; empty: every entity the remote holds.
    public let shapes: [SyncShape]
    /// Decides conflicts instead of the default rule (nil: ``SyncConflict/fieldwise``).
    public let resolver: SyncResolver?
    private let ownsRemote: Bool
    private let state = Locked(SyncStatus())
    private let identity = Locked<SyncReplica?>(nil)
    private let statusSubject = CurrentValueSubject<SyncStatus, Never>(SyncStatus())
    private let subject = PassthroughSubject<SyncEvent, Never>()
    private let queue = DispatchQueue(label: "reservoir.sync")
    let cycling = NSLock()
    /// The subscriptions to both stores' change sets while following (changed on `queue`, or by
    /// ``stop()`` within a round).
    private let following = Locked<[AnyCancellable]>([])
    /// The thread running a round where the remote's change set was delivered (see
    /// ``roundWhereHeard()``), while it runs.
    private let heardRoundThread = Locked<UInt?>(nil)
    /// The identities of the commits this replica made in either store and has not yet heard
    /// of from that store: their change sets start no round (the round that made them has seen
    /// them). Bounded: a commit heard of by no one (not following) is forgotten soon.
    private let ownCommits = Locked(Set<UInt64>())
    /// The newest local commit up to which the local history holds nothing to push past the
    /// pushed token: the pulls' own writes, each made while nothing else was waiting to be
    /// pushed. A push then has nothing to do without a write to move the token over them (it
    /// moves when it lags ``settledLag`` change sets, or the hold wants renewing).
    let settledLocally = Locked<CommitPosition?>(nil)
    /// ``settledLocally`` when it is the local store's newest commit (nothing else committed
    /// there since, as far as the store has announced).
    var settledHead: CommitPosition? {
        guard let settled = settledLocally.withLock({ $0 }), local.hub.lastPosition.isSameCommit(as: settled) else { return nil }
        return settled
    }
    /// How far the pushed token may lag behind ``settledLocally``, in change sets.
    static let settledLag: UInt64 = 64
    /// What the last push that found nothing to send read: the pushed token, its sequence and
    /// when. While only settled pulls have committed locally since, the next push finds the
    /// same without a read, for up to a second (then it reads, and renews the hold if due).
    let idlePush = Locked<(pushed: String, sequence: UInt64, at: ContinuousClock.Instant)?>(nil)
    /// The remote's entity descriptions as the pulls last read them (``catchUp()``).
    let describedRemotely = Locked<[String: EntityDescription]>([:])
    /// The remote's change sets heard while following, for the pulls.
    let heardRemotely = Locked(HeardChangeSets())
    /// A round is queued and has not started (asks until then are that round).
    private let pending = Locked(false)
    private let retryDelay = Locked<TimeInterval>(0.2)

    /// Change sets read from either store's history per page.
    public static let pageSize = 500
    /// Records read per page, and settled per local write, when the shapes are read whole
    /// (``SyncEvent/resynced(reason:records:token:)``; 5,000 by default). Set it before the
    /// replica's first push or pull.
    public var resyncPageSize = 5000

    /// A replica of `remote`'s `shapes` (every entity when empty) in `local`.
    public init(local: Store, remote: Store, shapes: [SyncShape] = [], resolver: SyncResolver? = nil) throws {
        try Self.checkShapes(shapes)
        try Self.checkDistinct(local, remote)
        self.local = local
        remoteStore = Locked(remote)
        remoteConfiguration = nil
        self.shapes = shapes
        self.resolver = resolver
        ownsRemote = false
        setUp()
    }

    /// A replica of the store `remote` names, opened through `registry` when first needed (and
    /// closed by ``stop()``), brought to `migrations`' newest version when given (as
    /// ``Store/open(_:registry:migrations:progress:)`` does). Throws `.invalidConfiguration` for a
    /// malformed string at once; a store that cannot be reached fails the pushes and pulls
    /// until it can (following, they are tried again, see ``start()``).
    public init(local: Store, remote configuration: String, shapes: [SyncShape] = [], resolver: SyncResolver? = nil,
                registry: BackendRegistry = .shared, migrations: Migrations? = nil) throws {
        try Self.checkShapes(shapes)
        _ = try StoreConfiguration(configuration)
        self.local = local
        remoteStore = Locked(nil)
        remoteConfiguration = (configuration, registry, migrations)
        self.shapes = shapes
        self.resolver = resolver
        ownsRemote = true
        setUp()
    }

    private func setUp() {
        queue.setSpecific(key: Self.queueKey, value: ())
        if let replica = try? knownReplica() {
            identity.withLock { $0 = replica }
            refreshPending(replica)
        }
    }

    private static let queueKey = DispatchSpecificKey<Void>()

    private static func checkDistinct(_ local: Store, _ remote: Store) throws {
        if local === remote || (local.backend.location == remote.backend.location && local.backend.location != "memory") {
            throw ReservoirError(.misuse, "the sync's local and remote stores are the same (\(local.backend.location)); expected a remote store elsewhere to mirror")
        }
    }

    /// The remote store, opened now if this replica opens it and has not reached it yet.
    func reachRemote() throws -> Store {
        if let store = remoteStore.withLock({ $0 }) { return store }
        guard let configuration = remoteConfiguration else { throw ReservoirError.closed(store: "the sync's remote store") }
        let store = try configuration.migrations.map { try Store.open(configuration.text, registry: configuration.registry, migrations: $0) }
            ?? Store.open(configuration.text, registry: configuration.registry)
        do {
            try Self.checkDistinct(local, store)
        } catch {
            store.close()
            throw error
        }
        remoteStore.withLock { $0 = store }
        queue.async { [self] in
            guard !following.withLock({ $0.isEmpty }) else { return }
            let hearing = hear(store)
            following.withLock { $0.append(hearing) }
        }
        return store
    }

    private static func checkShapes(_ shapes: [SyncShape]) throws {
        var seen = Set<String>()
        for shape in shapes where !seen.insert(shape.entity).inserted {
            throw ReservoirError(.misuse, "the sync shapes name entity \"\(shape.entity)\" twice; expected at most one shape per entity (combine the predicates with ||)")
        }
    }

    /// Where the replica stands.
    public var status: SyncStatus { state.withLock { $0 } }

    /// ``status`` now and after every change of it (on the thread that changed it); for the main
    /// actor and SwiftUI, ``LiveSyncStatus``.
    public var statusPublisher: AnyPublisher<SyncStatus, Never> { statusSubject.eraseToAnyPublisher() }

    /// Changes the status and sends the new one (outside the lock: a subscriber may read ``status``).
    func update(_ change: (inout SyncStatus) -> Void) {
        let new = state.withLock { status -> SyncStatus in
            change(&status)
            return status
        }
        statusSubject.send(new)
    }

    /// Every push's and pull's outcome, as it happens (on the thread that ran it).
    public var events: AnyPublisher<SyncEvent, Never> { subject.eraseToAnyPublisher() }

    // MARK: - Running

    /// Pushes the local changes, then pulls the remote's (``push()``, ``pull()``): after it,
    /// both stores hold the same records in the shapes, unless either changed meanwhile.
    /// Returns what each did.
    @discardableResult
    public func sync() throws -> [SyncEvent] {
        cycling.lock()
        defer { cycling.unlock() }
        return try round()
    }

    /// ``sync()`` with `cycling` held.
    private func round() throws -> [SyncEvent] {
        // The waiting changes are counted once, after both (the pull can change them too).
        let pushed = try reporting(counting: false) { try sendOutbox() }
        let pulled = try reporting { try catchUp() }
        return [pushed, pulled]
    }

    /// Sends the local changes the remote does not have yet, and returns what it did. Throws
    /// what the remote or local store threw; the changes stay to be sent again (and are
    /// applied on the remote once however often they are sent).
    @discardableResult
    public func push() throws -> SyncEvent {
        cycling.lock()
        defer { cycling.unlock() }
        return try reporting { try sendOutbox() }
    }

    /// Brings the replica up to the remote's newest change set, and returns what it did.
    /// Throws what the remote or local store threw (the replica then stays at its last token).
    /// Local changes not pushed yet stay, laid over the remote's rows.
    @discardableResult
    public func pull() throws -> SyncEvent {
        cycling.lock()
        defer { cycling.unlock() }
        return try reporting { try catchUp() }
    }

    /// `store.write`, remembering the commit it made as this replica's own (and telling
    /// `committed` its position, when it made one).
    func write<R>(_ store: Store, committed: (@Sendable (CommitPosition) -> Void)? = nil, _ body: (Transaction) throws -> R) throws -> R {
        try store.write(body, committing: { [ownCommits] changeSet in
            ownCommits.withLock { own in
                if own.count >= 64 { own.removeAll() }
                own.insert(changeSet.commit)
            }
            committed?(changeSet.position)
        })
    }

    /// Follows the remote store's change sets: kept for the pulls, and a round for each.
    private func hear(_ remote: Store) -> AnyCancellable {
        heardRemotely.withLock { $0 = HeardChangeSets(isHearing: true) }
        let hearing = remote.changeSets.sink { [weak self, weak remote] changeSet in
            guard let self else { return }
            heardRemotely.withLock { $0.hear(changeSet) }
            guard !isOwn(changeSet) else { return }
            if remote?.isDeliveringOnItsSignalThread == true, roundWhereHeard() { return }
            schedule()
        }
        // The chain starts where the remote store stood while nothing was on its way to this
        // subscriber: the first change set heard then follows on from it, so the first pull
        // after starting applies it without reading the remote. Not when something was heard
        // already (it may have been under way before), nor while the store was delivering.
        if let position = remote.hub.idlePosition {
            heardRemotely.withLock { heard in heard.anchor(at: position) }
        }
        return hearing
    }

    /// Runs a round here, on the remote store's signal thread that delivered the change set
    /// (``CommitWatch/wakesOnItsOwnThread``: PostgreSQL's listener, kept for that one store),
    /// when no round is running: one thread wake-up per remote commit instead of two. Never
    /// waits for a round (false then, and the caller schedules one): a round elsewhere may be
    /// waiting for this thread to deliver its push's commit.
    private func roundWhereHeard() -> Bool {
        guard DispatchQueue.getSpecific(key: Self.queueKey) == nil, !following.withLock({ $0.isEmpty }), cycling.try() else { return false }
        defer { cycling.unlock() }
        heardRoundThread.withLock { $0 = currentThreadID() }
        defer { heardRoundThread.withLock { $0 = nil } }
        do {
            _ = try round()
            retryDelay.withLock { $0 = 0.2 }
        } catch {
            schedule()  // tried again on the queue, waiting longer after each failure there
        }
        return true
    }

    /// A change set of either store while following: a round, unless this replica made it.
    private func heard(_ changeSet: ChangeSet) {
        if !isOwn(changeSet) { schedule() }
    }

    /// Whether this replica made the change set (forgotten as its own once heard).
    private func isOwn(_ changeSet: ChangeSet) -> Bool {
        !changeSet.isExternal && !changeSet.isRewound && changeSet.commit != 0
            && ownCommits.withLock { $0.remove(changeSet.commit) != nil }
    }

    /// Runs one push or pull, sending its event and keeping the status (the count of waiting
    /// changes too, unless `counting` is false and the push or pull succeeds).
    private func reporting(counting: Bool = true, _ body: () throws -> SyncEvent) throws -> SyncEvent {
        do {
            let event = try body()
            update {
                $0.isConnected = true
                $0.lastError = nil
            }
            if counting, let replica = identity.withLock({ $0 }) { refreshPending(replica) }
            subject.send(event)
            return event
        } catch let error as ReservoirError {
            update {
                $0.isConnected = false
                $0.lastError = error
            }
            if let replica = identity.withLock({ $0 }) { refreshPending(replica) }
            subject.send(.failed(error))
            throw error
        }
    }

    /// Sends the local changes a pull dropped, if any, as one event.
    func reportDropped(_ rejected: [SyncRejection]) {
        if !rejected.isEmpty { subject.send(.rejected(rejected)) }
    }

    /// Counts the local changes waiting to be pushed into the status (left as it is when the
    /// local store cannot say).
    func refreshPending(_ replica: SyncReplica) {
        // The local store's newest commit is a pull's write made while nothing waited to be
        // pushed (its outbox empty too): nothing waits now either, and nothing needs reading.
        if settledHead != nil {
            update { $0.pendingChanges = 0 }
            return
        }
        guard let count = try? local.read({ try self.pendingCount(replica, $0.reader) }) else { return }
        update { $0.pendingChanges = count }
    }

    // MARK: - Following

    /// Pushes and pulls now and after every commit of either store (other processes' and plain
    /// SQL's included), until ``stop()``. A failed round is tried again, waiting 0.2 s, then
    /// twice as long each time up to 30 s; ``status`` and ``events`` say so meanwhile (offline,
    /// the local changes wait in the local store, counted in ``SyncStatus/pendingChanges``).
    public func start() {
        queue.async { [self] in
            guard following.withLock({ $0.isEmpty }) else { return }
            var hearing = [local.changeSets.sink { [weak self] in self?.heard($0) }]
            if let remote { hearing.append(hear(remote)) }
            following.withLock { $0 = hearing }
            update { $0.isFollowing = true }
            runScheduled()
        }
    }

    /// Stops following, after the round under way (if any); closes a remote store it opened.
    /// Called from an ``events`` subscriber while following, it stops without waiting.
    public func stop() {
        let stopping = { [self] in
            let cancelled = following.withLock { following in
                defer { following = [] }
                return following
            }
            for subscription in cancelled { subscription.cancel() }
            heardRemotely.withLock { $0.stopHearing() }
            pending.withLock { $0 = false }
        }
        // Within a round (an events subscriber): on the queue, or where a change set was heard.
        if DispatchQueue.getSpecific(key: Self.queueKey) != nil || heardRoundThread.withLock({ $0 }) == currentThreadID() {
            stopping()
        } else {
            queue.sync(execute: stopping)
            cycling.lock()
            cycling.unlock()
        }
        update { $0.isFollowing = false }
        if ownsRemote { remoteStore.withLock { $0 }?.close() }
    }

    /// Asks for a round soon; rounds asked for while one waits are one round.
    private func schedule() {
        // One block on the queue for all the asks until it starts (a follower hears a commit
        // per remote commit; each block is a queue hop).
        guard pending.withLock({ asked in
            defer { asked = true }
            return !asked
        }) else { return }
        queue.async { [self] in
            pending.withLock { $0 = false }
            runScheduled()
        }
    }

    /// A round on the queue; on failure, another after the retry delay.
    private func runScheduled() {
        guard !following.withLock({ $0.isEmpty }) else { return }
        do {
            try sync()
            retryDelay.withLock { $0 = 0.2 }
        } catch {
            let delay = retryDelay.withLock { delay in
                defer { delay = min(30, delay * 2) }
                return delay
            }
            queue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.runScheduled() }
        }
    }

    // MARK: - State

    /// The shape `entity` is mirrored by, if any. Without shapes, every entity but the store's
    /// record of its schema versions (each store has its own, ``Migrations``).
    func shape(for entity: String) -> SyncShape? {
        if shapes.isEmpty { return entity == SchemaLedger.entityName ? nil : SyncShape(entity: entity) }
        return shapes.first { $0.entity == entity }
    }

    /// The shapes as the saved state records them, to notice a change.
    var shapeText: String {
        shapes.isEmpty ? "*" : shapes.map(\.description).sorted().joined(separator: "\n")
    }

    /// The local metadata key under which the replica remembers the remote's identity, so it
    /// can count its waiting changes before it reaches the remote.
    private var remoteKey: String {
        "sync.remote/" + (remoteConfiguration.flatMap { try? StoreConfiguration($0.text).redacted } ?? remote?.backend.location ?? "")
    }

    /// The replica's keys in the local store: named by the remote store's identity, read from
    /// the remote the first time (and remembered locally).
    func replica() throws -> SyncReplica {
        if let known = identity.withLock({ $0 }) { return known }
        let remote = try reachRemote()
        let store = try remote.read { try $0.reader.storeIdentity() }
        let replica = SyncReplica(remote: store?.uuidString.lowercased() ?? remote.backend.location)
        if try knownReplica() != replica {
            try write(local) { tx in try tx.writer.setMetadata(self.remoteKey, to: Data(replica.remote.utf8)) }
        }
        identity.withLock { $0 = replica }
        return replica
    }

    /// The replica's keys as the local store remembers them, without asking the remote.
    private func knownReplica() throws -> SyncReplica? {
        try local.read { snapshot in
            try snapshot.reader.metadata(self.remoteKey).flatMap { String(data: $0, encoding: .utf8) }.map(SyncReplica.init(remote:))
        }
    }
}

struct RecordKey: Hashable {
    var entity: String
    var id: Value
}
