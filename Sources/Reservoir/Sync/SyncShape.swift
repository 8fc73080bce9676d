import Foundation

/// Which records of the remote store a replica mirrors: one entity, or the records of one entity
/// a predicate selects. A record that stops matching leaves the replica; one that starts, joins.
public struct SyncShape: Sendable, Hashable, CustomStringConvertible {
    /// The entity's name (a record type's ``Schema`` name).
    public let entity: String
    /// The records mirrored; nil: all of them.
    public let predicate: RowPredicate?

    /// Every record of `entity`, or those `predicate` selects.
    public init(entity: String, where predicate: RowPredicate? = nil) {
        self.entity = entity
        self.predicate = predicate
    }

    /// Every record of a type.
    public init<T: Storable>(_ type: T.Type) {
        self.init(entity: T.schema.name)
    }

    /// The records a request selects (its sort and window do not apply).
    public init<T: Storable>(_ request: FetchRequest<T>) throws {
        self.init(entity: T.schema.name, where: try request.query().predicate)
    }

    public var description: String {
        predicate.map { "\(entity) where \($0)" } ?? entity
    }

    /// Whether `row` of this shape's entity belongs in the replica.
    func contains(_ row: Row) -> Bool {
        predicate.map { QueryEvaluator.matches($0, row) } ?? true
    }
}

/// What a replica's push or pull did (``Sync/push()``, ``Sync/pull()``), and what ``Sync/events`` reports.
public enum SyncEvent: Sendable, CustomStringConvertible {
    /// Change sets after the replica's token were applied; it is now at `token`.
    case pulled(changeSets: Int, records: Int, token: HistoryToken)
    /// The replica read its shapes whole, as of `token`, instead of catching up change set by
    /// change set: its first pull, shapes changed since the last, or the remote's history no
    /// longer reaching back to the replica's token (it is never silently behind).
    case resynced(reason: ResyncReason, records: Int, token: HistoryToken)
    /// Local changes were sent: `changes` records the server took, those it did not (each
    /// returned to the server's state locally), and the local token pushed up to.
    case pushed(changes: Int, rejected: [SyncRejection], token: HistoryToken?)
    /// Local changes a pull had to drop: made after the last push to records the server deleted
    /// meanwhile (a delete wins over a concurrent update).
    case rejected([SyncRejection])
    /// A push or pull failed (the remote unreachable, the local store refusing); it is tried again.
    case failed(ReservoirError)

    /// Why a replica read its shapes whole.
    public enum ResyncReason: String, Sendable {
        case firstSync, shapesChanged, historyExpired
    }

    public var description: String {
        switch self {
        case let .pulled(changeSets, records, token): "pulled \(changeSets) change set\(changeSets == 1 ? "" : "s") (\(records) record\(records == 1 ? "" : "s")), now at \(token)"
        case let .resynced(reason, records, token): "re-read the shapes whole (\(reason.rawValue)): \(records) record\(records == 1 ? "" : "s"), now at \(token)"
        case let .pushed(changes, rejected, _):
            "pushed \(changes) change\(changes == 1 ? "" : "s")" + (rejected.isEmpty ? "" : "; the server did not take \(rejected.count): " + rejected.map(\.description).joined(separator: "; "))
        case let .rejected(rejected): "dropped \(rejected.count) local change\(rejected.count == 1 ? "" : "s"): " + rejected.map(\.description).joined(separator: "; ")
        case let .failed(error): "failed: \(error.message)"
        }
    }
}

/// Where a replica stands (``Sync/status``).
public struct SyncStatus: Sendable {
    /// Whether the last attempt reached the remote store.
    public var isConnected = false
    /// Whether the replica follows the remote live (``Sync/start()``).
    public var isFollowing = false
    /// The remote token the replica has applied everything up to.
    public var token: HistoryToken?
    /// The last failure, until a pull succeeds.
    public var lastError: ReservoirError?
    /// Change sets applied since this `Sync` was made.
    public var changeSetsPulled = 0
    /// Records pushed (and taken by the server) since this `Sync` was made.
    public var changesPushed = 0
    /// Local changes waiting to be pushed: records changed locally that the server does not
    /// have yet (counted when the replica is made and after each push and pull).
    public var pendingChanges = 0
}
