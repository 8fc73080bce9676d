import CLMDB
import Foundation
import Reservoir

/// The store's own metadata as a write keeps it: the format version (checked and upgraded
/// by the first write on open) and the stored entity descriptions with their indexes.
extension LMDBTransaction {
    /// Index entries an index build collects before putting them.
    static let indexBuildBatch = 10_000

    /// Makes the stored description of `entity` match: builds indexes it adds, empties
    /// indexes it drops.
    func ensureEntity(_ entityIndex: Int) throws {
        if descriptions.lastEnsured == entityIndex { return }
        let entity = replay.entities[entityIndex]
        let stored = try storedDescription(entity.name)
        guard stored != entity else {
            descriptions.lastEnsured = entityIndex
            return
        }
        guard let meta = try database(StoreFormat.metaDatabase, create: true),
              let rows = try rowsDatabase(entity.name, create: true)
        else { return }
        let previous = Set(stored?.indexes ?? [])
        for column in stored?.indexes ?? [] where !entity.indexes.contains(column) {
            if let index = try indexDatabase(entity.name, column) {
                try liveTransaction().empty(index, "empty the index on \(entity.name).\(column)")
            }
        }
        for column in entity.indexes where !previous.contains(column) {
            guard let index = try indexDatabase(entity.name, column, create: true) else { continue }
            try liveTransaction().empty(index, "empty the index on \(entity.name).\(column)")
            try inBatches(rows) { key, value in
                guard let row = try? decodeRow(value, entity: entity.name, key: key) else { return nil }
                return withIndexKey(row.value(column), id: key) { Array($0) }
            } store: { entries in
                for entry in entries { try put(index, entry, []) }
            }
        }
        try writeDescription(entity, in: meta, ensured: entityIndex)
    }

    /// Calls `make` with each record of `dbi` in key order and `store` with what it made, a batch
    /// (``indexBuildBatch``) at a time: the scan's pages may not change under its cursor, and
    /// building an index over many rows holds one batch of entries, not one for each row.
    func inBatches(_ dbi: MDB_dbi, _ make: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> [UInt8]?,
                   store: ([[UInt8]]) throws -> Void) throws {
        var made: [[UInt8]] = []
        var start: [UInt8]?
        repeat {
            made.removeAll(keepingCapacity: true)
            var next: [UInt8]?
            try scan(dbi, from: start) { key, value in
                guard made.count < Self.indexBuildBatch else {
                    next = Array(key)
                    return false
                }
                if let entry = try make(key, value) { made.append(entry) }
                return true
            }
            try store(made)
            start = next
        } while start != nil
    }

    /// Stores `entity` as its entity's description in this transaction; `entityIndex` (in the
    /// replay log's entities) is then the description the last put made sure of, if any.
    func writeDescription(_ entity: EntityDescription, in meta: MDB_dbi, ensured entityIndex: Int?) throws {
        try put(meta, StoreFormat.entityKey(entity.name), StoreFormat.encode(entity))
        descriptions.written[entity.name] = entity
        descriptions.last = (entity.name, entity)
        descriptions.lastEnsured = entityIndex
    }

    func applyPrepareStore() throws {
        let txn = try liveTransaction()
        if let meta = try database(StoreFormat.metaDatabase) {
            if let bytes = try get(meta, StoreFormat.formatKey) {
                let version = bytes.count == 4 ? bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : 0
                guard StoreFormat.readableFormats.contains(version) else {
                    throw ReservoirError(.cannotOpen, "\(lmdbStore(path)): the store has format version \(version); this library reads formats \(StoreFormat.readableFormats.lowerBound) to \(StoreFormat.readableFormats.upperBound)")
                }
                _ = try database(StoreFormat.logDatabase, create: true)
                // Older stores hold rows and log records this library still reads; from now on
                // it writes ones (version 2 rows, version 3 log records) that libraries reading
                // only the older format cannot, so the stored number says so and they refuse.
                if version < StoreFormat.formatVersion {
                    try put(meta, StoreFormat.formatKey, withUnsafeBytes(of: StoreFormat.formatVersion.bigEndian) { Array($0) })
                }
                try makeStoreIdentity(meta)
                return
            }
        }
        let stat = try txn.stat(CLMDB_MAIN_DBI, "list the named databases")
        let ours = (try database(StoreFormat.metaDatabase) != nil ? 1 : 0) + (try database(StoreFormat.logDatabase) != nil ? 1 : 0)
        guard stat.ms_entries <= ours else {
            throw ReservoirError(.cannotOpen, "\(lmdbStore(path)): is an LMDB environment, but not a Reservoir store (it holds \(stat.ms_entries) records or databases of something else)")
        }
        guard let meta = try database(StoreFormat.metaDatabase, create: true) else { return }
        _ = try database(StoreFormat.logDatabase, create: true)
        try put(meta, StoreFormat.formatKey, withUnsafeBytes(of: StoreFormat.formatVersion.bigEndian) { Array($0) })
        try makeStoreIdentity(meta)
    }

    /// Gives the store its identity unless it has one (a new store, or one made before identities).
    private func makeStoreIdentity(_ meta: MDB_dbi) throws {
        guard try get(meta, StoreFormat.storeKey) == nil else { return }
        try put(meta, StoreFormat.storeKey, withUnsafeBytes(of: UUID().uuid) { Array($0) })
    }

    /// The store's identity, nil before the first write made one.
    func storeIdentity() throws -> UUID? {
        _ = try liveTransaction()
        return try LMDBErrors.convert(path: path) { () throws -> UUID? in
            guard let meta = try database(StoreFormat.metaDatabase), let bytes = try get(meta, StoreFormat.storeKey) else { return nil }
            guard bytes.count == 16 else {
                throw ReservoirError(.corrupt, "\(lmdbStore(path)): the store's identity is \(bytes.count) bytes, expected 16")
            }
            return UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
        }
    }

    /// The bytes under `data/KEY` in the meta database, or nil.
    func metadata(_ key: String) throws -> Data? {
        _ = try liveTransaction()
        return try LMDBErrors.convert(path: path) { () throws -> Data? in
            guard let meta = try database(StoreFormat.metaDatabase), let bytes = try get(meta, StoreFormat.metadataKey(key)) else { return nil }
            return Data(bytes)
        }
    }
}
