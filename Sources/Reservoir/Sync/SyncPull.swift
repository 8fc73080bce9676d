import Foundation

/// The pull half of ``Sync``: the remote's change sets after the replica's token, applied to
/// the local store with the replica's bases, local changes not pushed yet kept on top.
extension Sync {
    func catchUp() throws -> SyncEvent {
        let replica = try replica()
        let remote = try reachRemote()
        // A batch waiting in the outbox goes first: its records' bases are already what it
        // sends, so settling them to server rows without it would undo it locally.
        reportDropped(try finishWaitingBatch(replica))
        guard let saved = try local.read({ try replica.state($0.reader) }), let savedToken = saved.token else {
            return try resync(.firstSync, replica)
        }
        guard saved.shapes == shapeText else { return try resync(.shapesChanged, replica) }
        var token = try HistoryToken(parsing: savedToken)
        var changeSets = 0
        var records = 0
        var rejected: [SyncRejection] = []
        while true {
            let page: RemotePage?
            do {
                page = try remote.read { try self.readPage(after: token, $0) }
            } catch let error as ReservoirError where error.code == .historyExpired {
                return try resync(.historyExpired, replica)
            }
            guard let page else { break }
            try local.write { tx in
                let described = try Self.entityMap(tx.writer.entities())
                for change in page.changes {
                    guard let shape = self.shape(for: change.entity),
                          let entity = page.entities[change.entity] ?? described[change.entity] else { continue }
                    let server = change.row.flatMap { shape.contains($0) ? $0 : nil }
                    if let rejection = try replica.settle(entity, id: change.id, server: server, tx) { rejected.append(rejection) }
                }
                var state = try replica.state(tx.writer) ?? SyncState()
                state.token = page.token.description
                try replica.setState(state, tx.writer)
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
        reportDropped(rejected)
        return .pulled(changeSets: changeSets, records: records, token: token)
    }

    static func entityMap(_ entities: [EntityDescription]) -> [String: EntityDescription] {
        Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
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
        return RemotePage(changeSets: changeSets.count, token: last.token, changes: changes, entities: Self.entityMap(entities))
    }

    /// Reads the shapes whole from one remote snapshot and makes the local store hold exactly
    /// them (with the local changes not pushed yet on top), in one local write with the
    /// snapshot's token.
    private func resync(_ reason: SyncEvent.ResyncReason, _ replica: SyncReplica) throws -> SyncEvent {
        let remote = try reachRemote()
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
        var rejected: [SyncRejection] = []
        try local.write { tx in
            let remoteNames = Set(tables.map(\.0.name))
            var settling: [(EntityDescription, [Value: Row])] = []
            for entity in try tx.writer.entities() where !remoteNames.contains(entity.name) && self.isNamed(entity.name) {
                // A shape's entity the remote holds no rows of: none of its records are the server's.
                settling.append((entity, [:]))
            }
            for (entity, rows) in tables {
                settling.append((entity, Dictionary(rows.compactMap { row in row[entity.idColumn].map { ($0, row) } }, uniquingKeysWith: { first, _ in first })))
                records += rows.count
            }
            for (entity, server) in settling {
                var ids = Array(server.keys)
                for row in try tx.writer.fetch(try Query(entity: entity)) {
                    if let id = row[entity.idColumn], server[id] == nil { ids.append(id) }
                }
                for id in ids {
                    if let rejection = try replica.settle(entity, id: id, server: server[id], tx) { rejected.append(rejection) }
                }
            }
            var state = try replica.state(tx.writer) ?? SyncState()
            state.token = token.description
            state.shapes = self.shapeText
            try replica.setState(state, tx.writer)
        }
        update { $0.token = token }
        reportDropped(rejected)
        return .resynced(reason: reason, records: records, token: token)
    }
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
