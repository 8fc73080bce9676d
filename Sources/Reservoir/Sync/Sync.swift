import Foundation
import OpenCombineShim

/// A local store that mirrors chosen records of a remote store, built on the remote's history
/// (Backends.md, "Sync"). This is the pull half of offline-first sync: the app reads and observes
/// the local store as usual, and the remote's commits arrive there as ordinary local commits.
///
///     let sync = try Sync(local: store, remote: "postgres://app@db/app", shapes: [SyncShape(Todo.self)])
///     try sync.pull()          // catch up once, or:
///     sync.start()             // and follow live, until stop()
///
/// Each pull reads the remote's change sets after the replica's token and the current rows of
/// the records they touched in one remote snapshot, applies them in one local write together
/// with the new token (kept in the local store's metadata, so a replica resumes exactly after a
/// restart or a crash), page by page. A replica's first pull, a change of shapes, and a remote
/// history that no longer reaches back to its token make it read its shapes whole instead, and
/// say so (``SyncEvent/resynced(reason:records:token:)``): it never silently diverges.
///
/// Not yet: writes made to the local store are not sent to the remote (the push half), so the
/// replica is for records the remote owns; a local change to a mirrored record lasts until the
/// remote next changes that record, or the replica re-reads.
public final class Sync: @unchecked Sendable {
    // @unchecked: mutable state is in `state` (a lock) and `following` (touched on `queue` only).
    public let local: Store
    public let remote: Store
    /// The shapes mirrored; empty: every entity the remote holds.
    public let shapes: [SyncShape]
    private let ownsRemote: Bool
    private let state = Locked(SyncStatus())
    private let statusSubject = CurrentValueSubject<SyncStatus, Never>(SyncStatus())
    private let subject = PassthroughSubject<SyncEvent, Never>()
    private let queue = DispatchQueue(label: "reservoir.sync")
    private let pulling = NSLock()
    private var following: AnyCancellable?
    private var pending = false
    private var retryDelay: TimeInterval = 0.2

    /// Change sets read from the remote per page.
    public static let pageSize = 500

    /// A replica of `remote`'s `shapes` (every entity when empty) in `local`.
    public convenience init(local: Store, remote: Store, shapes: [SyncShape] = []) throws {
        try self.init(local: local, remote: remote, shapes: shapes, owning: false)
    }

    /// A replica of the store `remote` names (opened through `registry`, closed by ``stop()``).
    public convenience init(local: Store, remote configuration: String, shapes: [SyncShape] = [], registry: BackendRegistry = .shared) throws {
        try self.init(local: local, remote: try Store.open(configuration, registry: registry), shapes: shapes, owning: true)
    }

    private init(local: Store, remote: Store, shapes: [SyncShape], owning: Bool) throws {
        do {
            try Self.checkShapes(shapes)
            if local === remote || (local.backend.location == remote.backend.location && local.backend.location != "memory") {
                throw ReservoirError(.misuse, "the sync's local and remote stores are the same (\(local.backend.location)); expected a remote store elsewhere to mirror")
            }
        } catch {
            if owning { remote.close() }
            throw error
        }
        self.local = local
        self.remote = remote
        self.shapes = shapes
        ownsRemote = owning
        queue.setSpecific(key: Self.queueKey, value: ())
    }

    private static let queueKey = DispatchSpecificKey<Void>()

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
    private func update(_ change: (inout SyncStatus) -> Void) {
        let new = state.withLock { status -> SyncStatus in
            change(&status)
            return status
        }
        statusSubject.send(new)
    }

    /// Every pull's outcome, as it happens (on the thread that pulled).
    public var events: AnyPublisher<SyncEvent, Never> { subject.eraseToAnyPublisher() }

    // MARK: - Pulling

    /// Brings the replica up to the remote's newest change set, and returns what it did.
    /// Throws what the remote or local store threw (the replica then stays at its last token).
    @discardableResult
    public func pull() throws -> SyncEvent {
        pulling.lock()
        defer { pulling.unlock() }
        do {
            let event = try catchUp()
            update {
                $0.isConnected = true
                $0.lastError = nil
            }
            subject.send(event)
            return event
        } catch let error as ReservoirError {
            update {
                $0.isConnected = false
                $0.lastError = error
            }
            subject.send(.failed(error))
            throw error
        }
    }

    private func catchUp() throws -> SyncEvent {
        let key = try stateKey()
        guard let saved = try local.read({ try SyncState.read(key, $0.reader) }) else { return try resync(.firstSync, key: key) }
        guard saved.shapes == shapeText else { return try resync(.shapesChanged, key: key) }
        var token = try HistoryToken(parsing: saved.token)
        var changeSets = 0
        var records = 0
        while true {
            let page: RemotePage?
            do {
                page = try remote.read { try self.readPage(after: token, $0) }
            } catch let error as ReservoirError where error.code == .historyExpired {
                return try resync(.historyExpired, key: key)
            }
            guard let page else { break }
            try local.write { tx in
                let described = Dictionary(try tx.writer.entities().map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
                for change in page.changes {
                    guard let shape = self.shape(for: change.entity) else { continue }
                    if let row = change.row, shape.contains(row), let entity = page.entities[change.entity] ?? described[change.entity] {
                        try tx.putRow(row, in: entity)
                    } else if let entity = described[change.entity] {
                        try tx.deleteRow(id: change.id, in: entity)
                    }
                }
                try SyncState(token: page.token.description, shapes: self.shapeText).write(key, tx.writer)
            }
            token = page.token
            changeSets += page.changeSets
            records += page.changes.count
            update {
                $0.token = page.token
                $0.changeSetsPulled += page.changeSets
            }
        }
        update { $0.token = token }
        return .pulled(changeSets: changeSets, records: records, token: token)
    }

    /// One remote page: change sets after `token` and, from the same snapshot, the current row
    /// of every record they touched in the shapes. Nil when there are none.
    private func readPage(after token: HistoryToken, _ snapshot: Snapshot) throws -> RemotePage? {
        let changeSets = try snapshot.history(after: token, limit: Self.pageSize)
        guard let last = changeSets.last else { return nil }
        var seen = Set<RecordKey>()
        var changes: [RemoteChange] = []
        for changeSet in changeSets {
            for change in changeSet.changes where shape(for: change.entity) != nil {
                guard seen.insert(RecordKey(entity: change.entity, id: change.id)).inserted else { continue }
                changes.append(RemoteChange(entity: change.entity, id: change.id, row: try snapshot.reader.row(change.entity, id: change.id)))
            }
        }
        let touched = Set(changes.map(\.entity))
        let entities = try snapshot.entities().filter { touched.contains($0.name) }
        return RemotePage(changeSets: changeSets.count, token: last.token, changes: changes,
                          entities: Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }))
    }

    /// Reads the shapes whole from one remote snapshot and makes the local store hold exactly
    /// them, in one local write with the snapshot's token.
    private func resync(_ reason: SyncEvent.ResyncReason, key: String) throws -> SyncEvent {
        let (token, tables) = try remote.read { snapshot -> (HistoryToken, [(EntityDescription, [Row])]) in
            let token = try snapshot.currentHistoryToken()
            var tables: [(EntityDescription, [Row])] = []
            for entity in try snapshot.entities() {
                guard let shape = self.shape(for: entity.name) else { continue }
                tables.append((entity, try snapshot.rows(try Query(entity: entity, predicate: shape.predicate))))
            }
            return (token, tables)
        }
        var records = 0
        try local.write { tx in
            let remoteNames = Set(tables.map(\.0.name))
            for entity in try tx.writer.entities() where !remoteNames.contains(entity.name) && self.isNamed(entity.name) {
                // A shape's entity the remote no longer holds rows of: none belong here.
                for row in try tx.writer.fetch(try Query(entity: entity)) {
                    if let id = row[entity.idColumn] { try tx.deleteRow(id: id, in: entity) }
                }
            }
            for (entity, rows) in tables {
                let wanted = Set(rows.compactMap { $0[entity.idColumn] })
                for row in try tx.writer.fetch(try Query(entity: entity)) {
                    if let id = row[entity.idColumn], !wanted.contains(id) { try tx.deleteRow(id: id, in: entity) }
                }
                for row in rows { try tx.putRow(row, in: entity) }
                records += rows.count
            }
            try SyncState(token: token.description, shapes: self.shapeText).write(key, tx.writer)
        }
        update { $0.token = token }
        return .resynced(reason: reason, records: records, token: token)
    }

    // MARK: - Following

    /// Pulls now and after every remote commit (the remote's change sets, other processes' and
    /// plain SQL's included), until ``stop()``. A failed pull is retried, waiting 0.2 s, then
    /// twice as long each time up to 30 s; ``status`` and ``events`` say so meanwhile.
    public func start() {
        queue.async { [self] in
            guard following == nil else { return }
            following = remote.changeSets.sink { [weak self] _ in self?.schedule() }
            update { $0.isFollowing = true }
            runScheduled()
        }
    }

    /// Stops following, after the pull under way (if any); closes a remote store it opened.
    /// Called from an ``events`` subscriber while following, it stops without waiting.
    public func stop() {
        let stopping = { [self] in
            following?.cancel()
            following = nil
            pending = false
        }
        if DispatchQueue.getSpecific(key: Self.queueKey) != nil {
            stopping()
        } else {
            queue.sync(execute: stopping)
            pulling.lock()
            pulling.unlock()
        }
        update { $0.isFollowing = false }
        if ownsRemote { remote.close() }
    }

    /// Asks for a pull soon; pulls asked for while one waits are one pull.
    private func schedule() {
        queue.async { [self] in
            guard following != nil, !pending else { return }
            pending = true
            queue.async { [self] in
                pending = false
                runScheduled()
            }
        }
    }

    /// A pull on the queue; on failure, another after the retry delay.
    private func runScheduled() {
        guard following != nil else { return }
        do {
            try pull()
            retryDelay = 0.2
        } catch {
            let delay = retryDelay
            retryDelay = min(30, retryDelay * 2)
            queue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.runScheduled() }
        }
    }

    // MARK: - State

    /// The shape `entity` is mirrored by, if any. Without shapes, every entity but the store's
    /// record of its schema versions (each store has its own, ``Migrations``).
    private func shape(for entity: String) -> SyncShape? {
        if shapes.isEmpty { return entity == SchemaLedger.entityName ? nil : SyncShape(entity: entity) }
        return shapes.first { $0.entity == entity }
    }

    private func isNamed(_ entity: String) -> Bool {
        shapes.contains { $0.entity == entity }
    }

    /// The shapes as the saved state records them, to notice a change.
    private var shapeText: String {
        shapes.isEmpty ? "*" : shapes.map(\.description).sorted().joined(separator: "\n")
    }

    /// The local metadata key of this replica's state: one per remote store.
    private func stateKey() throws -> String {
        let identity = try remote.read { try $0.reader.storeIdentity() }
        return "sync.pull." + (identity?.uuidString.lowercased() ?? remote.backend.location)
    }
}

private struct RecordKey: Hashable {
    var entity: String
    var id: Value
}

private struct RemoteChange {
    var entity: String
    var id: Value
    var row: Row?
}

private struct RemotePage {
    var changeSets: Int
    var token: HistoryToken
    var changes: [RemoteChange]
    var entities: [String: EntityDescription]
}

/// A replica's saved state, in the local store's metadata under ``Sync``'s key.
struct SyncState: Codable, Equatable {
    var token: String
    var shapes: String

    static func read(_ key: String, _ reader: any ReadTransaction) throws -> SyncState? {
        try reader.decodedMetadata(SyncState.self, key, "the replica state")
    }

    func write(_ key: String, _ writer: any WriteTransaction) throws {
        try writer.setMetadata(key, to: try JSONEncoder().encode(self))
    }
}
