import Foundation

/// The pull half of ``Sync``: the remote's change sets after the replica's token, applied to
/// the local store with the replica's bases, local changes not pushed yet kept on top.
extension Sync {
    func catchUp() throws -> SyncEvent {
        let replica = try replica()
        let remote = try reachRemote()
        // A batch waiting in the outbox goes first: its records' bases are already what it
        // sends, so settling them to server rows without it would undo it locally.
        // One local read for both (most rounds find no batch waiting).
        let found = try local.read { snapshot in (waiting: try replica.outbox(snapshot.reader), state: try replica.state(snapshot.reader)) }
        var saved = found.state
        if let waiting = found.waiting {
            reportDropped(try finish(waiting, replica))
            saved = try local.read { try replica.state($0.reader) }
        }
        guard let saved, let savedToken = saved.token else {
            return try resync(.firstSync, replica)
        }
        guard saved.shapes == shapeText else { return try resync(.shapesChanged, replica) }
        var token = try HistoryToken(parsing: savedToken)
        var changeSets = 0
        var records = 0
        var rejected: [SyncRejection] = []
        func apply(_ page: RemotePage) throws {
            rejected += try self.apply(page, replica)
            token = page.token
            changeSets += page.changeSets
            records += page.changes.count
            update {
                $0.token = page.token
                $0.changeSetsPulled += page.changeSets
            }
        }
        // While following, what the remote store delivered, when it follows on from the token.
        if let heard = heardPage(after: token) {
            if let page = heard.page { try apply(page) }
            if heard.reachesEnd {
                reportDropped(rejected)
                return .pulled(changeSets: changeSets, records: records, token: token)
            }
        }
        while true {
            let page: RemotePage?
            do {
                page = try remote.read { try self.readPage(after: token, $0) }
            } catch let error as ReservoirError where error.code == .historyExpired {
                return try resync(.historyExpired, replica)
            }
            guard let page else { break }
            try apply(page)
            // A page short of full reached the newest change set of its snapshot: anything
            // newer is a commit this round has not heard of yet, and starts a round of its own.
            if page.changeSets < Self.pageSize { break }
        }
        update { $0.token = token }
        reportDropped(rejected)
        return .pulled(changeSets: changeSets, records: records, token: token)
    }

    /// Applies a page in one local write with its token; returns the local changes dropped.
    /// A write made while nothing waits to be pushed leaves nothing to push (``settledLocally``).
    private func apply(_ page: RemotePage, _ replica: SyncReplica) throws -> [SyncRejection] {
        try pullWrite(replica) { tx, before, nothingWaits in
            var rejected: [SyncRejection] = []
            let described = try Self.entityMap(tx.writer.entities())
            for change in page.changes {
                guard let shape = self.shape(for: change.entity),
                      let entity = page.entities[change.entity] ?? described[change.entity] else { continue }
                let server = change.row.flatMap { shape.contains($0) ? $0 : nil }
                if let rejection = try replica.settle(entity, id: change.id, server: server, nothingWaits: nothingWaits, tx) { rejected.append(rejection) }
            }
            var state = before ?? SyncState()
            state.token = page.token.description
            try replica.setState(state, tx.writer)
            return rejected
        }
    }

    /// A local write of a pull's, given the replica state before it. Made while nothing waits
    /// to be pushed (the outbox empty, the pushed token at the newest local commit or only such
    /// writes after it), it leaves nothing to push, and is remembered so (``settledLocally``):
    /// the next push and the count of waiting changes then read no history.
    private func pullWrite<R>(_ replica: SyncReplica, _ body: (Transaction, SyncState?, _ nothingWaits: Bool) throws -> R) throws -> R {
        let settled = Locked(false)
        return try write(local, committed: { [settledLocally] position in
            if settled.withLock({ $0 }) { settledLocally.withLock { $0 = position } }
        }) { tx in
            let before = try replica.state(tx.writer)
            let clean = try replica.outbox(tx.writer) == nil
                && (try before?.pushed.map { try self.nothingToPush(after: $0, tx.writer, lagging: .max) } ?? false)
            settled.withLock { $0 = clean }
            return try body(tx, before, clean)
        }
    }

    /// The change sets heard from the remote after `token` as one page (nil when there are
    /// none), and whether nothing newer was heard; nil when they cannot stand in for a read of
    /// the remote (see ``HeardChangeSets``; an entity or a column the last read did not
    /// describe needs a read too).
    private func heardPage(after token: HistoryToken) -> (page: RemotePage?, reachesEnd: Bool)? {
        guard let (heard, reachesEnd) = heardRemotely.withLock({ $0.take(after: token.position) }) else { return nil }
        guard let last = heard.last else { return (nil, reachesEnd) }
        let described = describedRemotely.withLock { $0 }
        var changes: [RemoteChange] = []
        var index: [RecordKey: Int] = [:]
        func note(_ entity: String, _ id: Value, _ row: Row?) {
            let key = RecordKey(entity: entity, id: id)
            if let at = index[key] {
                changes[at].row = row
            } else {
                index[key] = changes.count
                changes.append(RemoteChange(entity: entity, id: id, row: row))
            }
        }
        for changeSet in heard {
            for entityChanges in changeSet.entities where shape(for: entityChanges.entity) != nil {
                guard let entity = described[entityChanges.entity] else { return nil }
                for change in entityChanges.inserted + entityChanges.updated {
                    guard Self.describes(entity, change.row) else { return nil }
                    note(entityChanges.entity, change.id, change.row)
                }
                for id in entityChanges.deleted { note(entityChanges.entity, id, nil) }
            }
        }
        let token = HistoryToken(store: token.store ?? last.store, position: last.position)
        let touched = Set(changes.map(\.entity))
        let page = RemotePage(changeSets: heard.count, token: token, changes: changes,
                              entities: described.filter { touched.contains($0.key) })
        return (page, reachesEnd)
    }

    /// Whether `entity` has every column of `row` (a description read before the remote's
    /// entity gained a field does not).
    private static func describes(_ entity: EntityDescription, _ row: Row) -> Bool {
        row.columns.allSatisfy { $0 == entity.idColumn || entity.fields.contains($0) }
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
        // A migration on the remote changes descriptions whatever the rows show.
        if changeSets.contains(where: \.isSchemaChange) { describedRemotely.withLock { $0.removeAll() } }
        return RemotePage(changeSets: changeSets.count, token: last.token, changes: changes,
                          entities: try remoteEntities(for: changes, snapshot))
    }

    /// The remote's descriptions of the entities `changes` touch: as last read, while each
    /// such entity was described and every row's columns are its columns; else read again
    /// (on PostgreSQL a query over every table, so not once per page).
    private func remoteEntities(for changes: [RemoteChange], _ snapshot: Snapshot) throws -> [String: EntityDescription] {
        let touched = Set(changes.map(\.entity))
        let known = describedRemotely.withLock { $0 }
        let current = changes.allSatisfy { change in
            guard let entity = known[change.entity] else { return false }
            return change.row.map { Self.describes(entity, $0) } ?? true
        }
        if current { return known.filter { touched.contains($0.key) } }
        let described = Self.entityMap(try snapshot.entities())
        describedRemotely.withLock { $0.merge(described) { _, new in new } }
        return described.filter { touched.contains($0.key) }
    }

    /// Reads the shapes whole from one remote snapshot and makes the local store hold exactly
    /// them (with the local changes not pushed yet on top), then the snapshot's token.
    ///
    /// The rows are read in pages of ``resyncPageSize`` records by id and settled one local write
    /// per page, together with the local records in the same stretch of ids, so memory stays
    /// flat however many records the shapes hold (where the local backend has no index to find
    /// a stretch by, the local records the server lacks are found in one pass at the end,
    /// against the server's ids). Only the last write saves the token and the shapes: a resync
    /// cut short is done again, whole, by the next pull (each record settled meanwhile agrees
    /// with its base, so nothing is pushed twice or lost).
    private func resync(_ reason: SyncEvent.ResyncReason, _ replica: SyncReplica) throws -> SyncEvent {
        let remote = try reachRemote()
        var records = 0
        var rejected: [SyncRejection] = []
        let token = try remote.read { snapshot -> HistoryToken in
            let token = try snapshot.currentHistoryToken()
            let described = try snapshot.entities().filter { self.shape(for: $0.name) != nil }
            // What the pulls after this one check heard rows against (``heardPage(after:)``).
            self.describedRemotely.withLock { $0.merge(Self.entityMap(described)) { _, new in new } }
            let remoteNames = Set(described.map(\.name))
            // A shape's entity the remote does not list (a backend may list only entities with
            // rows): none of its records are the server's. With no shapes that is every local
            // entity the server lacks: the records it had (with a base here) go, those made here
            // stay to be pushed. (Only named shapes were settled so, and a replica following
            // every entity kept records the server had deleted, found by the long generator run.)
            let absent = try self.local.read { try $0.entities() }.filter { !remoteNames.contains($0.name) && self.shape(for: $0.name) != nil }
            for entity in absent {
                rejected += try self.settle(entity, server: [], locals: .between(nil, nil), replica)
            }
            // The local records in a stretch of ids are found by a query where the local backend
            // answers one from an index (SQLite); elsewhere by one pass after the pages, against
            // the server's ids (a set of ids, not rows, in memory).
            let ranged = self.local.backend.capabilities.contains(.nativeQueries)
            for entity in described {
                guard let shape = self.shape(for: entity.name) else { continue }
                var after: Value?
                var serverIDs = Set<Value>()
                while true {
                    var predicate = shape.predicate
                    if let after { predicate = .and([predicate, .compare(column: entity.idColumn, .greater, after)].compactMap { $0 }) }
                    let rows = try snapshot.rows(try Query(entity: entity, predicate: predicate,
                                                           sort: [SortTerm(column: entity.idColumn)], limit: resyncPageSize))
                    let last = rows.count == resyncPageSize ? rows.last?[entity.idColumn] : nil
                    if !ranged { for row in rows { if let id = row[entity.idColumn] { serverIDs.insert(id) } } }
                    rejected += try self.settle(entity, server: rows, locals: ranged ? .between(after, last) : .none, replica)
                    records += rows.count
                    guard let last else { break }
                    after = last
                }
                if !ranged { rejected += try self.settle(entity, server: [], locals: .besides(serverIDs), replica) }
            }
            // A record deleted here and not pushed yet whose id the server has no record under
            // (deleted there too) is gone on both sides: its base goes, and with it the delete,
            // which would otherwise delete a record someone makes anew under that id later.
            // (One the server still has was settled with the pages above.)
            let deletedHere = try self.unpushedDeletes(replica)
            var goneBoth: [(entity: String, id: Value)] = []
            for (name, ids) in deletedHere {
                for id in ids {
                    let row = remoteNames.contains(name) ? try snapshot.reader.row(name, id: id) : nil
                    let inShape = row.map { self.shape(for: name)?.contains($0) == true } ?? false
                    if !inShape { goneBoth.append((name, id)) }
                }
            }
            if !goneBoth.isEmpty {
                try self.pullWrite(replica) { tx, _, _ in
                    for (name, id) in goneBoth where try tx.writer.row(name, id: id) == nil {
                        try replica.setBase(nil, name, id: id, tx.writer)
                    }
                }
            }
            return token
        }
        try pullWrite(replica) { tx, before, _ in
            var state = before ?? SyncState()
            state.token = token.description
            state.shapes = self.shapeText
            try replica.setState(state, tx.writer)
        }
        update { $0.token = token }
        reportDropped(rejected)
        return .resynced(reason: reason, records: records, token: token)
    }


    /// Which local records a ``settle(_:server:locals:_:)`` takes along with the server's rows.
    private enum LocalRecords {
        case none
        /// Those with ids after the first bound and up to the second (nil: unbounded).
        case between(Value?, Value?)
        /// Those whose ids are not among these (the server's, in the shape).
        case besides(Set<Value>)
    }

    /// One local write settling `rows` (the server's, of `entity`, in its shape) and the local
    /// records `locals` names that are not among them (made locally, they stay; the server's
    /// before, they go). Returns the local changes dropped.
    private func settle(_ entity: EntityDescription, server rows: [Row], locals: LocalRecords,
                        _ replica: SyncReplica) throws -> [SyncRejection] {
        var server: [Value: Row] = [:]
        var ids: [Value] = []
        for row in rows {
            guard let id = row[entity.idColumn], server.updateValue(row, forKey: id) == nil else { continue }
            ids.append(id)
        }
        let query: Query?
        switch locals {
        case .none:
            query = nil
        case let .between(after, through):
            var bounds: [RowPredicate] = []
            if let after { bounds.append(.compare(column: entity.idColumn, .greater, after)) }
            if let through { bounds.append(.compare(column: entity.idColumn, .lessOrEqual, through)) }
            query = try Query(entity: entity, predicate: bounds.isEmpty ? nil : .and(bounds))
        case .besides:
            query = try Query(entity: entity)
        }
        return try pullWrite(replica) { tx, _, nothingWaits in
            if let query {
                try tx.writer.fetch(query) { row in
                    guard let id = row[entity.idColumn], server[id] == nil else { return }
                    if case let .besides(known) = locals, known.contains(id) { return }
                    ids.append(id)
                }
            }
            var rejected: [SyncRejection] = []
            for id in ids {
                if let rejection = try replica.settle(entity, id: id, server: server[id], nothingWaits: nothingWaits, tx) { rejected.append(rejection) }
            }
            return rejected
        }
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
