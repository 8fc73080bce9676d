import Foundation

/// Reading the history in a snapshot: the history and the records read in one ``Store/read(_:)``
/// describe the same moment, so a consumer can say exactly "the state as of this token".
extension Snapshot {
    /// The token of the newest change set this snapshot shows.
    public final func currentHistoryToken() throws -> HistoryToken {
        try checkOpen()
        return HistoryToken(store: try reader.storeIdentity(), position: try reader.lastCommit())
    }

    /// The change sets after `token`, oldest first, at most `limit` of them (fewer, or none,
    /// when the snapshot shows no more: continue from the last one's token).
    ///
    /// Throws `.historyExpired` when the store can no longer say exactly what came after
    /// `token`: its retained history no longer reaches back to it, the commit it names was lost
    /// (and its number reused by another), or it is ahead of the store (an older copy was
    /// restored). Throws `.invalidToken` for a token of another store.
    public final func history(after token: HistoryToken, limit: Int = 1000) throws -> [HistoryChangeSet] {
        try checkOpen()
        guard limit > 0 else {
            throw ReservoirError(.misuse, "history(after:limit:) was given the limit \(limit); expected 1 or more change sets")
        }
        let store = try Self.check(token, reader)
        let entries = try reader.changeLog(after: token.sequence, limit: limit)
        return ChangeLogReader.netted(entries).map { changeSet in
            HistoryChangeSet(token: HistoryToken(store: store, position: changeSet.position),
                             changes: changeSet.changes.map { HistoryChangeSet.Change(entity: $0.entity, id: $0.id, kind: $0.kind) })
        }
    }

    /// Checks that `reader`'s store can say exactly what came after `token` (see
    /// ``history(after:limit:)``), returning the store's identity.
    static func check(_ token: HistoryToken, _ reader: any ReadTransaction) throws -> UUID? {
        let store = try reader.storeIdentity()
        if let store, let other = token.store, store != other {
            throw ReservoirError(.invalidToken, "the history token \(token) is of the store \(other.uuidString.lowercased()), not of this store (\(store.uuidString.lowercased())); take tokens from the store you read")
        }
        let last = try reader.lastCommit()
        if token.sequence > last.sequence {
            throw Self.expired(token, "it is ahead of the store's newest change set #\(last.sequence) (an older copy was restored, or commits were lost)")
        }
        if token.sequence > 0 {
            guard let held = try reader.commit(at: token.sequence) else {
                let oldest = try reader.changeLog(after: 0, limit: 1).first?.sequence
                throw Self.expired(token, "the store's history no longer reaches back to it" + (oldest.map { ", it starts at change set #\($0)" } ?? ""))
            }
            guard held.isSameCommit(as: token.position) else {
                throw Self.expired(token, "the commit it names was lost and its number #\(token.sequence) now names another (the store lost commits, or an older copy was restored)")
            }
        } else if last.sequence > 0, let first = try reader.changeLog(after: 0, limit: 1).first?.sequence, first > 1 {
            throw Self.expired(token, "the store's history no longer reaches back to its beginning, it starts at change set #\(first)")
        }
        return store
    }

    static func expired(_ token: HistoryToken, _ why: String) -> ReservoirError {
        ReservoirError(.historyExpired, "the history token \(token) can no longer be answered: \(why); re-read what you keep from the store and continue from Store.currentHistoryToken")
    }
}

extension Store {
    /// The token of the newest committed change set: keep it, and ask for what came after it
    /// later with ``history(after:limit:)``.
    public var currentHistoryToken: HistoryToken {
        get throws { try read { try $0.currentHistoryToken() } }
    }

    /// The change sets committed after `token`, oldest first, at most `limit` of them; see
    /// ``Snapshot/history(after:limit:)``, which reads them together with records.
    /// (`history(after:)` without a limit is the async sequence that goes on live.)
    public func history(after token: HistoryToken, limit: Int) throws -> [HistoryChangeSet] {
        try read { try $0.history(after: token, limit: limit) }
    }
}
