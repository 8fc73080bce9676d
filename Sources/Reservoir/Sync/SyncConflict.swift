import Foundation

/// A local change meeting a server row that changed since the replica last saw it: another
/// client wrote the record in between. ``Sync`` decides it by the default rule
/// (``fieldwise``) unless the app gives a resolver (``Sync/init(local:remote:shapes:resolver:)``).
public struct SyncConflict: Sendable {
    /// The entity's name.
    public let entity: String
    /// The record's id.
    public let id: Value
    /// The server's row now (nil: the server has no such record, it was deleted there).
    public let server: Row?
    /// The server's row as the replica last saw it, which the local change was made to
    /// (nil: the record was made locally).
    public let base: Row?
    /// The local row to push (nil: the record was deleted locally).
    public let local: Row?
    /// The columns the local change set, compared with ``base`` (every column of a record
    /// made locally; none for a local delete).
    public let changedColumns: [String]

    /// The default rule, last writer wins field by field in the server's order: the server's
    /// row with the columns the local change set overwritten, because this change reaches
    /// the server after the other client's; a record made locally is written whole. A delete wins over a concurrent update either
    /// way: a local delete deletes, and a local update of a record the server deleted is
    /// dropped (reported as rejected, and the local record is removed).
    public var fieldwise: SyncResolution {
        guard let local else { return .delete }
        // A record made locally is written whole (over one of the same id made elsewhere too).
        guard base != nil else { return .write(local) }
        guard var row = server else {
            return .reject("the record was deleted on the server, and a delete wins over a concurrent update")
        }
        for column in changedColumns { row[column] = local[column] ?? .null }
        return .write(row)
    }
}

/// How a pushed change is applied on the server.
public enum SyncResolution: Sendable {
    /// Store this row as the record (it must keep the record's id).
    case write(Row)
    /// Delete the record.
    case delete
    /// Apply nothing: the change is reported as rejected with this reason
    /// (``SyncEvent/pushed(changes:rejected:token:)``), and the local record returns to the
    /// server's state.
    case reject(String)
}

/// Decides a conflict (``SyncConflict``); runs on the thread that pushes, inside the server's
/// write transaction, so it should be quick and must not use the stores.
public typealias SyncResolver = @Sendable (SyncConflict) -> SyncResolution

/// A local change the server did not take: a resolver rejected it, it broke a constraint, or
/// the server refused it (a type it cannot store, no permission). The local record was
/// returned to the server's state.
public struct SyncRejection: Sendable, Hashable, CustomStringConvertible {
    /// The entity's name.
    public let entity: String
    /// The record's id.
    public let id: Value
    /// Why, as the resolver or the server said.
    public let reason: String

    public var description: String { "\(entity) \(id): \(reason)" }
}
