import Foundation

/// Identifies a live fetch for sharing: the record type it decodes and its query.
struct SharedResultsKey: Hashable, Sendable {
    let type: ObjectIdentifier
    let query: Query
}

/// A subscription fed by ``SharedLiveResults``.
protocol SharedResultsMember<Record>: AnyObject, Sendable {
    associatedtype Record: Storable

    /// The results as they are when the member joins. Called under the shared results'
    /// lock: the member must only store it, not call its subscriber.
    func resultsJoined(_ entries: ChunkedList<LiveEntry<Record>>)

    /// The results went from `before` to `after`, as `delta` says. Called outside any lock,
    /// on the delivering thread, once per change, in order.
    func resultsDidChange(after: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta)

    /// The results can no longer be kept (a re-fetch or decode failed, or the store stopped).
    func resultsDidFail(_ error: any Error)
}

/// One live fetch's results, kept up to date once for every subscription on the store
/// that runs the same query for the same record type.
///
/// The results and their delta per change set are computed once; each subscription
/// (``LiveSubscription``) keeps only what it has sent, its demand and its coalescing. It
/// observes the ``ChangeHub`` with the query's ``SubscriptionRoute`` and holds its records
/// in the store's ``SharedRecords`` under its hub token, which is where the hub looks up a
/// changed record's holders, so a keyed fetch is reached only by changes that can affect it.
/// It lives as long as a member holds it; the last member leaving stops it.
final class SharedLiveResults<T: Storable>: ChangeObserver, @unchecked Sendable {
    // @unchecked: mutable state is guarded by `condition`. Lock order: this lock, then a
    // member's lock or the hub's; members and the hub never call in here holding theirs.
    private struct WeakMember {
        weak var member: (any SharedResultsMember<T>)?
    }

    /// Guards the members, the results and the state. Lock order: 1st of the store's five
    /// (see ``ChangeHub``): a member's lock or the hub's may be taken under it.
    private let condition = NSCondition()
    private let store: Store
    private let key: SharedResultsKey
    private let route: SubscriptionRoute
    private var results: LiveResults<T>?
    private var failure: (any Error)?
    /// The initial fetch's error, for members that waited to join.
    private var loadError: (any Error)?
    private var isLoaded = false
    private var isClosed = false
    /// Change sets that arrived while the fetch ran.
    private var early: [ChangeSet] = []
    private var token: UInt64?
    private var members: [UInt64: WeakMember] = [:]
    private var nextMember: UInt64 = 0

    private init(store: Store, key: SharedResultsKey) {
        self.store = store
        self.key = key
        route = SubscriptionRoute(query: key.query)
    }

    /// Joins `member` to the shared results for `query` on `store`, fetching them if no
    /// subscription shares them yet. Returns the results and the member's id in them.
    static func join(_ member: some SharedResultsMember<T>, store: Store, query: Query) throws -> (SharedLiveResults<T>, UInt64) {
        let key = SharedResultsKey(type: ObjectIdentifier(T.self), query: query)
        // Kept results lag commits the hub has not heard of yet (another process's, before
        // the wake-up): only join them when the store shows nothing newer than the hub has seen.
        let visible = try store.backend.read { try $0.lastSequence() }
        var closed: SharedLiveResults<T>?
        while true {
            let (shared, isNew) = store.hub.sharedResults(key, visibleSequence: visible, replacing: closed) { SharedLiveResults(store: store, key: key) }
            if isNew { shared.load() }
            if let id = try shared.add(member) { return (shared, id) }
            closed = shared
        }
    }

    /// Observes, fetches, applies what arrived meanwhile, and says what it holds.
    private func load() {
        let token = store.hub.addObserver(self, route: route)
        var fetched: LiveResults<T>?
        var fetchError: (any Error)?
        do {
            let records = store.hub.records.table(for: T.self, entity: key.query.entity.name)
            fetched = try LiveResults(query: key.query, backend: store.backend, records: records, holder: token)
        } catch {
            fetchError = error
        }
        condition.lock()
        self.token = token
        results = fetched
        failure = fetchError ?? store.hub.failure
        for changeSet in early where failure == nil {
            _ = applyLocked(changeSet)
        }
        early = []
        isLoaded = true
        condition.broadcast()
        if let failure {
            // Those waiting to join get the error, as their own fetch would have.
            loadError = failure
            let held = closeLocked()
            condition.unlock()
            return stopObserving(held)
        }
        if route.isKeyed {
            // Its records are in the shared table since the fetch: keys and holders now
            // bring it every change that can affect it.
            store.hub.setReady(token)
        }
        condition.unlock()
    }

    /// Adds a member once loaded; nil when these results have closed (the caller makes new ones).
    private func add(_ member: some SharedResultsMember<T>) throws -> UInt64? {
        condition.lock()
        defer { condition.unlock() }
        while !isLoaded { condition.wait() }
        if let loadError { throw loadError }
        guard !isClosed, let results else { return nil }
        nextMember += 1
        members[nextMember] = WeakMember(member: member)
        member.resultsJoined(results.entries)
        return nextMember
    }

    /// Removes a member; the last one leaving stops the observation and releases the results.
    func leave(_ id: UInt64) {
        condition.lock()
        members[id] = nil
        members = members.filter { $0.value.member != nil }
        guard members.isEmpty, !isClosed else { return condition.unlock() }
        let held = closeLocked()
        condition.unlock()
        stopObserving(held)
    }

    /// Marks the results closed and releases them (and so their records); returns the
    /// token to unregister.
    private func closeLocked() -> UInt64? {
        isClosed = true
        results = nil
        defer { token = nil }
        return token
    }

    private func stopObserving(_ token: UInt64?) {
        if let token { store.hub.removeObserver(token) }
        store.hub.dropSharedResults(key, self)
    }

    // MARK: - Changes

    func storeDidCommit(_ changeSet: ChangeSet) {
        condition.lock()
        guard isLoaded else {
            early.append(changeSet)
            return condition.unlock()
        }
        guard let results, failure == nil, !isClosed else { return condition.unlock() }
        // No copy of the list before the change is kept here: holding one while `apply`
        // edits the list would copy the edited chunk and the chunk index on every commit
        // (about 15 µs at 20,000 records). A member that needs it undoes `delta`.
        guard let delta = applyLocked(changeSet) else { return failLocked() }
        guard !delta.isEmpty else { return condition.unlock() }
        let after = results.entries
        let targets = membersInOrder()
        condition.unlock()
        for target in targets { target.resultsDidChange(after: after, delta: delta) }
    }

    func storeDidFail(_ error: ReservoirError) {
        condition.lock()
        guard isLoaded, failure == nil, !isClosed else { return condition.unlock() }
        failure = error
        failLocked()
    }

    /// Applies `changeSet` (which updates what it holds in the shared table); nil (with
    /// `failure` set) on error.
    private func applyLocked(_ changeSet: ChangeSet) -> LiveResults<T>.Delta? {
        guard let results else { return nil }
        do {
            return try results.apply(changeSet, backend: store.backend)
        } catch {
            failure = error
            return nil
        }
    }

    /// Members in the order they joined, as subscribers were served before sharing.
    private func membersInOrder() -> [any SharedResultsMember<T>] {
        if members.count == 1 {
            // The usual case, without the generic `compactMap` over the dictionary's values.
            guard let only = members.first?.value.member else { return [] }
            return [only]
        }
        return members.sorted { $0.key < $1.key }.compactMap { $0.value.member }
    }

    /// Tells every member of the failure and closes. Called locked; returns unlocked.
    private func failLocked() {
        let error = failure ?? ReservoirError(.backend, "internal: shared live results failed without an error")
        let targets = membersInOrder()
        members = [:]
        let held = closeLocked()
        condition.unlock()
        stopObserving(held)
        for target in targets { target.resultsDidFail(error) }
    }
}
