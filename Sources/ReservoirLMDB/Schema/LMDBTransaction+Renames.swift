import CLMDB
import Foundation
import Reservoir

/// Columns renamed in place (``RenameHistory``): what a transaction reads rows through, and
/// the migration's rename that writes an entry instead of rewriting every row.
extension LMDBTransaction {
    // MARK: - Reading

    /// Every entity's column renames as this transaction sees them: this write's own, else
    /// the environment's for the snapshot's commit, else read from `meta` (and cached there).
    func storeRenames() throws -> StoreRenames {
        if let known = rowCoding.renames, rowCoding.renamesAt == snapshot.id { return known }
        let renames: StoreRenames
        if let cached = environment.cachedRenames(at: snapshot.id) {
            renames = cached
        } else {
            // Not changed by this transaction (it would have set rowCoding.renames), so as of
            // the snapshot's commit.
            renames = try LMDBErrors.convert(path: path) { try readStoredRenames() }
            environment.cacheRenames(renames, at: snapshot.id)
        }
        rowCoding.renames = renames
        rowCoding.renamesAt = snapshot.id
        rowCoding.anyRenames = !renames.byEntity.isEmpty
        rowCoding.lastHistory = nil
        return renames
    }

    /// The entity's rename history; nil when its columns were never renamed in place. Without
    /// renames in the store, a transaction's second call (and a reused read's at the same commit)
    /// compares two numbers; with some, the entity looked up last is compared by name.
    @inline(__always)
    func renameHistory(_ entity: String) throws -> RenameHistory? {
        if rowCoding.renamesAt == snapshot.id {
            if !rowCoding.anyRenames { return nil }
            if let last = rowCoding.lastHistory, last.entity == entity { return last.history }
        }
        let history = try storeRenames().history(entity)
        rowCoding.lastHistory = (entity, history)
        return history
    }

    private func readStoredRenames() throws -> StoreRenames {
        guard let meta = try database(StoreFormat.metaDatabase) else { return .none }
        var byEntity: [String: RenameHistory] = [:]
        let prefix = StoreFormat.renamesKeyPrefix
        try scan(meta, from: prefix) { key, value in
            guard key.starts(with: prefix) else { return false }
            let name = String(decoding: key[prefix.count...], as: UTF8.self)
            guard let history = StoreFormat.decodeRenames(value) else {
                throw ReservoirError(.corrupt, "\(lmdbStore(path)): the stored column renames of entity \"\(name)\" cannot be decoded (\(value.count) bytes, version byte \(value.first.map(String.init) ?? "none")); this library reads version 1")
            }
            byEntity[name] = history
            return true
        }
        return byEntity.isEmpty ? .none : StoreRenames(byEntity: byEntity)
    }

    // MARK: - Renaming

    func renameColumns(_ renames: [(old: String, new: String)], in entity: EntityDescription,
                       to renamed: EntityDescription) throws -> Bool {
        let pairs = renames.map { RenameHistory.Rename(old: $0.old, new: $0.new) }
        return try perform(.renameColumns(entity: entity, renames: pairs, renamed: renamed)) {
            try applyRenameColumns(pairs, in: entity, to: renamed)
        }
    }

    /// Records `renames` for `entity`'s rows under the next free layout number, moves the index
    /// of a renamed column to the database named by its new name, stores `renamed` as its
    /// description and marks the store format 5. Returns false, changing nothing, when a row of
    /// the entity may already hold a new name, or a new name is indexed already.
    func applyRenameColumns(_ renames: [RenameHistory.Rename], in entity: EntityDescription,
                            to renamed: EntityDescription) throws -> Bool {
        let olds = Set(renames.map(\.old))
        let news = Set(renames.map(\.new))
        guard !renames.isEmpty, olds.count == renames.count, news.count == renames.count,
              olds.isDisjoint(with: news),
              !entity.indexes.contains(where: news.contains),
              !news.contains(entity.idColumn), !olds.contains(entity.idColumn)
        else { return false }
        guard let meta = try database(StoreFormat.metaDatabase, create: true) else { return false }
        let history = try renameHistory(entity.name)
        let (layouts, watermark) = try storedLayouts(meta)
        // Every layout a row of the entity names is below the watermark. When none, as the
        // entity reads it, holds a new name, no row does; otherwise look at the rows'.
        let holdsNew = { (columns: [String]) in columns.contains(where: news.contains) }
        if layouts.contains(where: { holdsNew(history?.view(of: $0).columns ?? $0.columns) }),
           try rowsHoldAny(of: entity.name, history: history, holdsNew) {
            return false
        }
        for rename in renames where entity.indexes.contains(rename.old) {
            try moveIndex(of: entity.name, from: rename.old, to: rename.new)
        }
        let entry = RenameHistory.Entry(watermark: watermark, renames: renames)
        let updated = history?.appending(entry) ?? RenameHistory(entries: [entry])
        try put(meta, StoreFormat.renamesKey(entity.name), StoreFormat.encodeRenames(updated))
        // A library that does not know renames would read the old names: the format says so.
        let format = try get(meta, StoreFormat.formatKey).map { $0.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } } ?? 0
        if format < StoreFormat.renamesFormat {
            try put(meta, StoreFormat.formatKey, withUnsafeBytes(of: StoreFormat.renamesFormat.bigEndian) { Array($0) })
        }
        try writeDescription(renamed, in: meta, ensured: nil)
        var byEntity = try storeRenames().byEntity
        byEntity[entity.name] = updated
        rowCoding.renames = StoreRenames(byEntity: byEntity)
        rowCoding.renamesAt = snapshot.id
        rowCoding.anyRenames = true
        rowCoding.renamed = true
        rowCoding.lastHistory = nil
        // The entity's next rows need a layout at or above the new watermark.
        rowCoding.lastWrittenNumber = nil
        handles.lastPut = nil
        return true
    }

    /// Copies the entries of the index on `old` (value then id: they do not name the column)
    /// into the index database of `new`, a batch at a time, and empties the old one, which stays
    /// as a dropped index's does.
    private func moveIndex(of entity: String, from old: String, to new: String) throws {
        guard let target = try indexDatabase(entity, new, create: true) else { return }
        try liveTransaction().empty(target, "empty the index on \(entity).\(new)")
        guard let source = try indexDatabase(entity, old) else { return }
        try inBatches(source) { key, _ in Array(key) } store: { keys in
            for key in keys { try key.withUnsafeBytes { try putEmpty(target, $0) } }
        }
        try liveTransaction().empty(source, "empty the index on \(entity).\(old)")
    }

    /// Whether a row of `entity` reads (through `history`) a column list `test` accepts,
    /// looking at each layout its rows name once.
    private func rowsHoldAny(of entity: String, history: RenameHistory?, _ test: ([String]) -> Bool) throws -> Bool {
        guard let rows = try rowsDatabase(entity) else { return false }
        var seen = Set<UInt32>()
        var last: UInt32?
        var found = false
        try scan(rows) { key, value in
            if let (number, _) = RowCodec.header(value) {
                guard number != last else { return true }
                last = number
                guard seen.insert(number).inserted else { return true }
                guard let layout = try layout(number) else { throw corruptRow(value, entity: entity, key: key) }
                found = test(history?.view(of: layout).columns ?? layout.columns)
            } else {
                guard let row = RowCodec.decodeNamed(value) else { throw corruptRow(value, entity: entity, key: key) }
                found = test(history?.renamed(row.columns, from: nil) ?? row.columns)
            }
            return !found
        }
        return found
    }
}
