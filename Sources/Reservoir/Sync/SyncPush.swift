import Foundation

/// The push half of ``Sync``: the local changes since the pushed token, taken as a batch, applied
/// on the server once, and the server's answer applied locally.
///
/// Each batch goes through three transactions, and a crash, a lost connection or an unknown
/// commit outcome between any two leaves something the next push finishes:
/// 1. local: the changed records are taken into the outbox, their bases set to what is pushed,
///    and the pushed token moved past them (with the replica's hold on the local history);
/// 2. remote: each item applied by the conflict rule, and the batch's name recorded in the
///    server's ``PushMarker`` for this replica, so a batch sent again is not applied again;
/// 3. local: the records the server did not take as sent return to the server's rows, and the
///    outbox is emptied. A batch found already applied (step 3 was lost) settles every item to
///    the server's row, keeping local changes made after it.
extension Sync {
    func sendOutbox() throws -> SyncEvent {
        let replica = try replica()
        var sent = 0
        var rejected: [SyncRejection] = []
        var remoteIDs: [String: Set<Value>]?
        while true {
            switch try takeBatch(replica, remoteIDs: remoteIDs) {
            case let .done(pushed):
                let token = pushed.flatMap { try? HistoryToken(parsing: $0) }
                update { $0.changesPushed += sent }
                return .pushed(changes: sent, rejected: rejected, token: token)
            case .advanced:
                continue
            case .needsRemoteIDs:
                remoteIDs = try readRemoteIDs()
            case let .batch(batch):
                let outcome = try applyRemotely(batch, replica)
                let refused = try confirm(batch, outcome, replica)
                rejected += refused
                sent += batch.items.count - refused.count
            }
        }
    }

    /// Sends `batch`, the one waiting in the outbox (and nothing newer); returns its rejections.
    func finish(_ batch: OutboxBatch, _ replica: SyncReplica) throws -> [SyncRejection] {
        let refused = try confirm(batch, try applyRemotely(batch, replica), replica)
        update { $0.changesPushed += batch.items.count - refused.count }
        return refused
    }

    // MARK: - 1. Taking a batch

    private enum Step {
        case batch(OutboxBatch)
        /// The pushed token moved on past change sets with nothing to push (the pulls' own).
        case advanced
        /// Nothing (more) to send; the pushed token.
        case done(String?)
        /// The local history no longer reaches back to the pushed token: every record is
        /// compared with its base, and records deleted locally are found among the server's.
        case needsRemoteIDs
    }

    /// The changed records and the local token they reach to.
    private struct Collected {
        var items: [(entity: String, id: Value, local: Row?, base: Row?, changed: [String])] = []
        var through: HistoryToken
        var reachedEnd: Bool
    }

    private func takeBatch(_ replica: SyncReplica, remoteIDs: [String: Set<Value>]?) throws -> Step {
        // Most rounds (each remote commit starts one) find nothing to send: said by a read,
        // without a local write, or by the last such read when only settled pulls followed it.
        if let idle = idlePush.withLock({ $0 }), let settled = settledHead, settled.sequence >= idle.sequence,
           settled.sequence - idle.sequence <= Self.settledLag, ContinuousClock.now - idle.at < .seconds(1) {
            return .done(idle.pushed)
        }
        let idle = try local.read { snapshot -> String? in
            let reader = snapshot.reader
            guard try replica.outbox(reader) == nil, let state = try replica.state(reader), let pushed = state.pushed,
                  try self.nothingToPush(after: pushed, reader, lagging: Self.settledLag) else { return nil }
            return self.holdNeedsRenewing(replica, reader) ? nil : pushed
        }
        if let idle {
            let sequence = (try? HistoryToken(parsing: idle))?.sequence
            idlePush.withLock { $0 = sequence.map { (idle, $0, ContinuousClock.now) } }
            return .done(idle)
        }
        idlePush.withLock { $0 = nil }
        return try write(local) { tx in
            let writer = tx.writer
            if let waiting = try replica.outbox(writer) { return .batch(waiting) }
            var state = try replica.state(writer) ?? SyncState()
            if let pushed = state.pushed, try self.nothingToPush(after: pushed, writer, lagging: .max) {
                // Only the pulls' settled writes follow the pushed token (each was made with
                // nothing waiting, see `pullWrite`): the token moves over them unread.
                let head = HistoryToken(store: try writer.storeIdentity(), position: try writer.lastCommit())
                state.pushed = head.description
                if state.pushed != pushed { try replica.setState(state, writer) }
                try self.hold(replica, at: head, writer)
                return .done(state.pushed)
            }
            guard let collected = try self.collect(replica, state, writer, limit: Self.pageSize, remoteIDs: remoteIDs) else { return .needsRemoteIDs }
            let before = state.pushed
            for item in collected.items {
                try replica.setBase(item.local, item.entity, id: item.id, writer)
            }
            state.pushed = collected.through.description
            if state.pushed != before || !collected.items.isEmpty { try replica.setState(state, writer) }
            try self.hold(replica, at: collected.through, writer)
            guard !collected.items.isEmpty else { return collected.reachedEnd ? .done(state.pushed) : .advanced }
            let batch = OutboxBatch(token: collected.through.description, items: collected.items.map { item in
                OutboxBatch.Item(entity: item.entity, id: ExactCoding.encode(item.id), local: item.local.map(ExactCoding.encode),
                                 base: item.base.map(ExactCoding.encode), changed: item.changed)
            })
            try replica.setOutbox(batch, writer)
            return .batch(batch)
        }
    }

    /// The records changed since the pushed token (at most `limit` change sets of them), or,
    /// when the history no longer reaches back or nothing was pushed yet, every record that
    /// differs from its base. Nil when that needs the server's ids and `remoteIDs` is nil.
    private func collect(_ replica: SyncReplica, _ state: SyncState, _ reader: any ReadTransaction, limit: Int,
                         remoteIDs: [String: Set<Value>]?) throws -> Collected? {
        let store = try reader.storeIdentity()
        let newest = HistoryToken(store: store, position: try reader.lastCommit())
        var touched: [RecordKey] = []
        var collected = Collected(through: newest, reachedEnd: true)
        var sets: [ChangeLogReader.Netted]?
        let pushed = try state.pushed.map(HistoryToken.init(parsing:))
        if let pushed {
            do {
                sets = try changeSets(after: pushed, reader, limit: limit)
            } catch let error as ReservoirError where error.code == .historyExpired {
                sets = nil
            }
        }
        if let pushed, let sets {
            guard let last = sets.last else { return Collected(through: pushed, reachedEnd: true) }
            var seen = Set<RecordKey>()
            for set in sets {
                for change in set.changes where isPushed(change.entity) {
                    let key = RecordKey(entity: change.entity, id: change.id)
                    if seen.insert(key).inserted { touched.append(key) }
                }
            }
            collected.through = HistoryToken(store: store, position: last.position)
            collected.reachedEnd = last.position.sequence == newest.sequence
        } else {
            // Whole: every local record, and (once the replica has bases) the server's records
            // a local delete may have removed here.
            if state.token != nil || state.pushed != nil {
                guard let remoteIDs else { return nil }
                for (entity, ids) in remoteIDs {
                    for id in ids where try reader.row(entity, id: id) == nil { touched.append(RecordKey(entity: entity, id: id)) }
                }
            }
            // Each record compared with its base as the fetch hands it over: memory holds the
            // changes, not every record (a first push after reading a million).
            for entity in try reader.entities() where isPushed(entity.name) {
                try reader.fetch(try Query(entity: entity)) { row in
                    if let id = row[entity.idColumn] { try compare(entity.name, id, row) }
                }
            }
        }
        func compare(_ entity: String, _ id: Value, _ row: Row?) throws {
            let base = try replica.base(entity, id: id, reader)
            switch LocalEdit(local: row, base: base) {
            case .none: break
            case .deleted: collected.items.append((entity, id, nil, base, []))
            case .made: collected.items.append((entity, id, row, nil, row?.columns ?? []))
            case let .changed(columns): collected.items.append((entity, id, row, base, columns))
            }
        }
        for key in touched {
            try compare(key.entity, key.id, try reader.row(key.entity, id: key.id))
        }
        return collected
    }

    /// The records of the shapes deleted locally since the pushed token that still have a base,
    /// by entity: deletes not pushed yet. Empty when nothing was pushed or the local history no
    /// longer reaches back (a push then finds local deletes among the server's ids).
    func unpushedDeletes(_ replica: SyncReplica) throws -> [String: [Value]] {
        try local.read { snapshot in
            let reader = snapshot.reader
            guard let text = try replica.state(reader)?.pushed, var after = try? HistoryToken(parsing: text) else { return [:] }
            var found: [String: [Value]] = [:]
            var seen = Set<RecordKey>()
            while true {
                let sets: [ChangeLogReader.Netted]
                do {
                    sets = try changeSets(after: after, reader, limit: Self.pageSize)
                } catch let error as ReservoirError where error.code == .historyExpired {
                    return [:]
                }
                for set in sets {
                    for change in set.changes where isPushed(change.entity) && seen.insert(RecordKey(entity: change.entity, id: change.id)).inserted {
                        if try reader.row(change.entity, id: change.id) == nil, try replica.base(change.entity, id: change.id, reader) != nil {
                            found[change.entity, default: []].append(change.id)
                        }
                    }
                }
                guard sets.count == Self.pageSize, let last = sets.last else { return found }
                after = HistoryToken(store: after.store, position: last.position)
            }
        }
    }

    /// The local change sets after `token`, netted; throws `.historyExpired` as the history does.
    private func changeSets(after token: HistoryToken, _ reader: any ReadTransaction, limit: Int) throws -> [ChangeLogReader.Netted] {
        _ = try Snapshot.check(token, reader)
        return ChangeLogReader.netted(try reader.changeLog(after: token.sequence, limit: limit))
    }

    /// Whether local changes to `entity` are pushed: the shapes' entities (every entity but the
    /// schema versions' record, without shapes).
    private func isPushed(_ entity: String) -> Bool {
        shape(for: entity) != nil
    }

    /// Keeps the local history after `token` for the replica (when the local backend follows
    /// ``HistoryRetention``; otherwise a push after its history is gone compares every record).
    private func hold(_ replica: SyncReplica, at token: HistoryToken, _ writer: any WriteTransaction) throws {
        guard local.backend.historyRetention != nil else { return }
        var holds = try HistoryHoldRecord.read(writer)
        holds.removeAll { $0.consumer == replica.holdName }
        holds.append(HistoryHoldRecord(consumer: replica.holdName, sequence: token.sequence, commit: token.position.commit,
                                       renewed: Date().timeIntervalSince1970))
        try HistoryHoldRecord.write(holds, writer)
    }

    /// Whether the local history after the pushed token holds nothing to push: it is the
    /// newest commit, or only the pulls' own writes follow it (``settledLocally``), at most
    /// `lagging` change sets of them.
    func nothingToPush(after pushed: String, _ reader: any ReadTransaction, lagging: UInt64) throws -> Bool {
        let head = try reader.lastCommit()
        // Compared as tokens, not as text: a round asks this once or twice, and writing the
        // head's token out cost more than reading the pushed one.
        guard let token = try? HistoryToken(parsing: pushed) else { return false }
        if token == HistoryToken(store: try reader.storeIdentity(), position: head) { return true }
        guard settledLocally.withLock({ $0?.isSameCommit(as: head) ?? false }), token.sequence <= head.sequence else { return false }
        return head.sequence - token.sequence <= lagging
    }

    /// Whether the replica's hold is missing or past a tenth of the hold age (so a replica that
    /// syncs at all keeps its hold well within the age).
    private func holdNeedsRenewing(_ replica: SyncReplica, _ reader: any ReadTransaction) -> Bool {
        guard let retention = local.backend.historyRetention else { return false }
        guard let hold = (try? HistoryHoldRecord.read(reader))?.first(where: { $0.consumer == replica.holdName }) else { return true }
        return Date().timeIntervalSince1970 - hold.renewed > HistoryRetention.seconds(retention.holdAge) / 10
    }

    /// The ids of the server's records in the shapes, by entity.
    private func readRemoteIDs() throws -> [String: Set<Value>] {
        try reachRemote().read { snapshot in
            var ids: [String: Set<Value>] = [:]
            for entity in try snapshot.entities() {
                guard let shape = self.shape(for: entity.name) else { continue }
                ids[entity.name] = Set(try snapshot.rows(try Query(entity: entity, predicate: shape.predicate)).compactMap { $0[entity.idColumn] })
            }
            return ids
        }
    }

    /// The local changes waiting to be pushed: the outbox's, and the records that differ from
    /// their bases since the pushed token (every record that does, when that cannot be said).
    func pendingCount(_ replica: SyncReplica, _ reader: any ReadTransaction) throws -> Int {
        let waiting = try replica.outbox(reader)?.items.count ?? 0
        let state = try replica.state(reader) ?? SyncState()
        if let pushed = state.pushed, try nothingToPush(after: pushed, reader, lagging: .max) { return waiting }
        let collected = try collect(replica, state, reader, limit: Int.max, remoteIDs: [:])
        return waiting + (collected?.items.count ?? 0)
    }

    // MARK: - 2. Applying on the server

    private enum Outcome {
        /// Applied now: the items the server did not take as sent, with why and its row.
        case applied([Int: (reason: String, server: Row?)])
        /// Applied before (the local answer was lost): the server's rows of every item.
        case appliedBefore([Row?])
    }

    private struct DecodedItem {
        var entity: String
        var id: Value
        var local: Row?
        var base: Row?
        var changed: [String]
    }

    private func decode(_ batch: OutboxBatch) throws -> [DecodedItem] {
        try batch.items.map { item in
            let what = "an item of the replica's outbox (\(item.entity))"
            return DecodedItem(entity: item.entity, id: try ExactCoding.decodeValue(item.id, what),
                               local: try item.local.map { try ExactCoding.decodeRow($0, what) },
                               base: try item.base.map { try ExactCoding.decodeRow($0, what) }, changed: item.changed)
        }
    }

    private func applyRemotely(_ batch: OutboxBatch, _ replica: SyncReplica) throws -> Outcome {
        let remote = try reachRemote()
        let items = try decode(batch)
        let replicaID = try local.read { try replica.state($0.reader)?.replica } ?? UUID()
        let key = PushMarker.key(replicaID)
        let localEntities = try local.read { try Self.entityMap($0.entities()) }
        func marker(_ reader: any ReadTransaction) throws -> PushMarker? {
            try reader.decodedMetadata(PushMarker.self, key, "the sync marker of replica \(replicaID.uuidString.lowercased())")
        }
        func serverRows() throws -> [Row?] {
            try remote.read { snapshot in try items.map { try snapshot.reader.row($0.entity, id: $0.id) } }
        }
        // The whole batch in one transaction.
        var started = 0
        do {
            let whole = try write(remote) { tx -> Outcome? in
                if let done = try marker(tx.writer), done.batch == batch.token {
                    started = done.applied
                    return done.applied >= items.count ? .appliedBefore([]) : nil
                }
                var refused: [Int: (String, Row?)] = [:]
                let entities = try Self.entityMap(tx.writer.entities())
                for (index, item) in items.enumerated() {
                    if let reason = try self.apply(item, tx, remote: entities, local: localEntities) {
                        refused[index] = (reason, try tx.writer.row(item.entity, id: item.id))
                    }
                }
                try tx.writer.setMetadata(key, to: try JSONEncoder().encode(PushMarker(batch: batch.token, applied: items.count)))
                return .applied(refused)
            }
            if case .appliedBefore = whole { return .appliedBefore(try serverRows()) }
            if let whole { return whole }
        } catch let error as ReservoirError where Self.isRefusal(error) {
            // One item the server refuses: apply them one by one, to name it and send the rest.
        }
        // Item by item, each with the marker, from where an earlier attempt stopped.
        var refused: [Int: (reason: String, server: Row?)] = [:]
        for index in items.indices where index >= started {
            let item = items[index]
            do {
                try write(remote) { tx in
                    if let done = try marker(tx.writer), done.batch == batch.token, done.applied > index { return }
                    if let reason = try self.apply(item, tx, remote: try Self.entityMap(tx.writer.entities()), local: localEntities) {
                        refused[index] = (reason, try tx.writer.row(item.entity, id: item.id))
                    }
                    try tx.writer.setMetadata(key, to: try JSONEncoder().encode(PushMarker(batch: batch.token, applied: index + 1)))
                }
            } catch let error as ReservoirError where Self.isRefusal(error) {
                try write(remote) { tx in
                    try tx.writer.setMetadata(key, to: try JSONEncoder().encode(PushMarker(batch: batch.token, applied: index + 1)))
                }
                refused[index] = ("the server refused it: \(error.message)", try remote.read { try $0.reader.row(item.entity, id: item.id) })
            }
        }
        if started > 0 {
            // Items before `started` went in an earlier attempt whose answers were lost.
            let rows = try serverRows()
            for index in 0..<started where refused[index] == nil { refused[index] = ("", rows[index]) }
        }
        return .applied(refused)
    }

    /// Errors that say the server will not take this change (so sending it again would not
    /// help), rather than that it could not be reached.
    static func isRefusal(_ error: ReservoirError) -> Bool {
        [.refused, .invalidSchema, .typeMismatch, .valueOutOfRange, .duplicateID, .readOnly, .invalidQuery, .misuse].contains(error.code)
    }

    /// Applies one item on the server by the conflict rule; the reason when it is not taken.
    private func apply(_ item: DecodedItem, _ tx: Transaction, remote entities: [String: EntityDescription],
                       local localEntities: [String: EntityDescription]) throws -> String? {
        let server = try tx.writer.row(item.entity, id: item.id)
        let conflict = SyncConflict(entity: item.entity, id: item.id, server: server, base: item.base, local: item.local,
                                    changedColumns: item.changed)
        let resolution = server == item.base ? conflict.fieldwise : (resolver?(conflict) ?? conflict.fieldwise)
        switch resolution {
        case let .write(row):
            guard let entity = entities[item.entity] ?? localEntities[item.entity] else {
                return "neither store describes the entity \"\(item.entity)\""
            }
            guard let id = row[entity.idColumn], id == item.id else {
                return "the resolver's row has the id \(row[entity.idColumn].map(String.init(describing:)) ?? "nil"), expected \(item.id)"
            }
            if row != server { try tx.putRow(row, in: entity) }
        case .delete:
            if server != nil, let entity = entities[item.entity] { try tx.deleteRow(id: item.id, in: entity) }
        case let .reject(reason):
            return reason
        }
        return nil
    }

    // MARK: - 3. The answer, locally

    /// Returns the local records the server did not take to its rows (keeping local changes
    /// made since the batch was taken), empties the outbox, and returns the rejections.
    private func confirm(_ batch: OutboxBatch, _ outcome: Outcome, _ replica: SyncReplica) throws -> [SyncRejection] {
        let items = try decode(batch)
        var settling: [Int: (reason: String, server: Row?)] = [:]
        switch outcome {
        case let .applied(refused): settling = refused
        case let .appliedBefore(rows): for (index, row) in rows.enumerated() { settling[index] = ("", row) }
        }
        var rejected: [SyncRejection] = []
        try write(local) { tx in
            let described = try Self.entityMap(tx.writer.entities())
            for (index, answer) in settling.sorted(by: { $0.key < $1.key }) {
                let item = items[index]
                guard let entity = described[item.entity] else { continue }
                let server = answer.server.flatMap { row in self.shape(for: item.entity)?.contains(row) == false ? nil : row }
                let dropped = try replica.settle(entity, id: item.id, server: server, since: .some(item.local), tx)
                if !answer.reason.isEmpty {
                    rejected.append(SyncRejection(entity: item.entity, id: item.id, reason: answer.reason))
                } else if let dropped {
                    rejected.append(dropped)   // changed again since, against a record the server deleted
                }
            }
            try replica.setOutbox(nil, tx.writer)
        }
        return rejected
    }
}
