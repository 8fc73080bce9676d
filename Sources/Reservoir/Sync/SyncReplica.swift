import Foundation

/// What a replica keeps in the local store's metadata (Backends.md, "Sync"), all written in the
/// same local transactions as the records they describe:
///
/// - `sync.<remote>`: its state (``SyncState``): the remote token pulled up to, the shapes, the
///   local token pushed up to, and the replica's own identity (the server knows its pushes by it);
/// - `sync.base/<remote>/<entity>/<id>`: each mirrored record's base, the server's row as the
///   replica last saw it. A local record that differs from its base holds local changes still
///   to push, column by column; one equal to it has none;
/// - `sync.outbox/<remote>`: the batch of local changes being pushed (``OutboxBatch``), from
///   the moment it is taken until the server's answer is applied locally.
///
/// The local history after the pushed token, held for the replica (``Store/retainHistory(for:from:)``),
/// says which records may have changed; their rows and bases say what changed.
struct SyncReplica: Equatable {
    /// The remote store's identity (or location), naming this replica's keys.
    let remote: String
    /// The state this replica last wrote or read (``state(_:)``, ``setState(_:_:)``).
    private let stateMemo = MetadataMemo<SyncState>()

    init(remote: String) {
        self.remote = remote
    }

    static func == (lhs: SyncReplica, rhs: SyncReplica) -> Bool {
        lhs.remote == rhs.remote
    }

    var stateKey: String { "sync." + remote }
    var outboxKey: String { "sync.outbox/" + remote }
    /// The name the replica holds the local history under.
    var holdName: String { "sync " + remote }

    func baseKey(_ entity: String, _ id: Value) -> String {
        "sync.base/\(remote)/\(entity)/" + Self.idText(id)
    }

    /// `id` as key text: its exact bytes in base64, or for a long id a 128-bit hash of them
    /// (keys stay short enough for every backend's metadata; LMDB's keys end at 511 bytes).
    static func idText(_ id: Value) -> String {
        let bytes = ExactCoding.encode(id)
        guard bytes.count > 192 else { return bytes.base64EncodedString() }
        func fnv(_ seed: UInt64) -> UInt64 {
            bytes.reduce(seed) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        }
        return "#" + String(fnv(0xCBF2_9CE4_8422_2325), radix: 16) + String(fnv(0x6C62_272E_07BB_0142), radix: 16)
    }

    func base(_ entity: String, id: Value, _ reader: any ReadTransaction) throws -> Row? {
        try base(at: baseKey(entity, id), entity, id: id, reader)
    }

    private func base(at key: String, _ entity: String, id: Value, _ reader: any ReadTransaction) throws -> Row? {
        guard let data = try reader.metadata(key) else { return nil }
        return try ExactCoding.decodeRow(data, "the replica's base row of \(entity) \(id)")
    }

    func setBase(_ row: Row?, _ entity: String, id: Value, _ writer: any WriteTransaction) throws {
        try writer.setMetadata(baseKey(entity, id), to: row.map(ExactCoding.encode))
    }

    func state(_ reader: any ReadTransaction) throws -> SyncState? {
        try reader.decodedMetadata(SyncState.self, stateKey, "the replica state", memo: stateMemo)
    }

    func setState(_ state: SyncState, _ writer: any WriteTransaction) throws {
        let data = state.json
        // Remembered before the commit: bytes and value belong together whether it commits or not.
        stateMemo.remember(state, as: data)
        try writer.setMetadata(stateKey, to: data)
    }

    func outbox(_ reader: any ReadTransaction) throws -> OutboxBatch? {
        try reader.decodedMetadata(OutboxBatch.self, outboxKey, "the replica's outbox")
    }

    func setOutbox(_ batch: OutboxBatch?, _ writer: any WriteTransaction) throws {
        try writer.setMetadata(outboxKey, to: try batch.map { try encodedMetadata($0) })
    }

    /// Makes the local store hold `server` (the server's row, nil: no record) as the record's
    /// base, and as the record itself unless it has local changes: those stay, laid over the
    /// server's row column by column, except over a record the server deleted (a delete wins
    /// over a concurrent update). Local changes are measured against `since` (for a record in a
    /// pushed batch, the row the batch took), or when it is not given against the base. Returns
    /// the rejection to report when local changes were dropped.
    ///
    /// `nothingWaits`: nothing waits to be pushed (see `Sync.pullWrite`), so a record missing
    /// here that has a base is no local delete still to send: it was sent, or found to have
    /// nothing to send (a push comparing every record finds local deletes among the server's
    /// ids, and the server had deleted it too). The server's row, if any, is then the record.
    func settle(_ entity: EntityDescription, id: Value, server: Row?, since given: Row?? = nil, nothingWaits: Bool = false,
                _ tx: Transaction) throws -> SyncRejection? {
        // The key once for the read and the write.
        let key = baseKey(entity.name, id)
        let known = try base(at: key, entity.name, id: id, tx.writer)
        let since = given ?? known
        let local = try tx.writer.row(entity.name, id: id)
        var rejection: SyncRejection?
        var edit = LocalEdit(local: local, base: since)
        if edit == .deleted && nothingWaits && given == nil { edit = .none }
        switch edit {
        case .none:
            if let server {
                if local != server { try tx.putRow(server, in: entity) }
            } else if local != nil {
                try tx.deleteRow(id: id, in: entity)
            }
        case .deleted:
            break
        case .made:
            break   // the local record stays whole; its push writes it so
        case let .changed(columns):
            if var merged = server {
                for column in columns { merged[column] = local?[column] ?? .null }
                if local != merged { try tx.putRow(merged, in: entity) }
            } else {
                try tx.deleteRow(id: id, in: entity)
                rejection = SyncRejection(entity: entity.name, id: id, reason: "the record was deleted on the server (or left the replica's shapes), and a delete wins over a concurrent update")
            }
        }
        if known != server { try tx.writer.setMetadata(key, to: server.map(ExactCoding.encode)) }
        return rejection
    }
}

/// What changed in a local record since its base.
enum LocalEdit: Equatable {
    case none
    case deleted
    /// A record the base does not have: all of it is the local change (a backend may leave a
    /// null column out of the row it reads, so its columns are not a list of what changed).
    case made
    /// These columns differ.
    case changed([String])

    init(local: Row?, base: Row?) {
        switch (local, base) {
        case (nil, nil): self = .none
        case (nil, .some): self = .deleted
        case (.some, nil): self = .made
        case let (local?, base?):
            // Compared in the contract's order (1 == 1.0), so a backend storing a value in
            // another case does not count as a change; a column missing on one side is null.
            var columns = local.columns.filter { local[$0] != (base[$0] ?? .null) }
            columns += base.columns.filter { local.index(of: $0) == nil && !(base[$0] ?? .null).isNull }
            self = columns.isEmpty ? .none : .changed(columns)
        }
    }
}

/// A replica's saved state, in the local store's metadata under ``SyncReplica/stateKey``.
struct SyncState: Codable, Equatable {
    /// The remote token everything up to is applied (nil: never pulled).
    var token: String?
    /// The shapes as of the last pull, to notice a change.
    var shapes: String?
    /// The local token every change up to is pushed or in the outbox (nil: never pushed).
    var pushed: String?
    /// The replica's identity, which the server keeps its pushes under.
    var replica: UUID

    init(replica: UUID = UUID()) {
        self.replica = replica
    }
}

/// Written every pull: by hand (`JSONEncoder` was a few percent of a following replica's
/// round), as `JSONEncoder` writes it; `JSONDecoder` reads members in any order.
extension SyncState {
    var json: Data {
        var writer = JSONObjectWriter()
        writer.member("token", token)
        writer.member("shapes", shapes)
        writer.member("pushed", pushed)
        writer.member("replica", replica)
        return writer.data
    }
}

/// Local changes taken for one push, kept until the server's answer is applied locally, so
/// a push interrupted anywhere (a crash, a lost connection, an unknown commit outcome) is
/// sent again as the same batch, which the server's marker (``PushMarker``) applies once.
struct OutboxBatch: Codable {
    struct Item: Codable {
        var entity: String
        var id: Data
        /// The local row pushed (nil: deleted).
        var local: Data?
        /// Its base when taken (nil: made locally).
        var base: Data?
        var changed: [String]
    }

    /// The local token the batch covers changes up to: the batch's name on the server.
    var token: String
    var items: [Item]
}

/// What the server keeps for each replica that pushes to it, in the same transaction as what
/// it applied: the newest batch, and how many of its items are done (all of them unless it
/// was applied item by item after a rejection).
struct PushMarker: Codable {
    var batch: String
    var applied: Int

    static func key(_ replica: UUID) -> String { "sync.push/" + replica.uuidString.lowercased() }
}
