import CLMDB
import Foundation
import Reservoir

/// What this process knows of the environment's committed state, shared by its
/// transactions: named-database handles, entity descriptions, the newest sequence.
extension LMDBEnvironment {
    // MARK: - Named-database handles

    /// The committed handles, for a transaction about to begin.
    func committedHandles() -> [String: MDB_dbi?] {
        handlesLock.lock()
        defer { handlesLock.unlock() }
        return committed.all
    }

    /// The committed handles, those of entities' row databases by entity name, and the count
    /// of deletions so far (``CommittedHandles/deletions``).
    func committedHandlesAndRows() -> ([String: MDB_dbi?], [String: MDB_dbi], UInt64) {
        handlesLock.lock()
        defer { handlesLock.unlock() }
        return (committed.all, committed.rowsByEntity, committed.deletions)
    }

    /// The committed handles as ``committedHandlesAndRows()`` gives them, with their
    /// ``CommittedHandles/version``; nil when that is still `known`, the version a reused read
    /// transaction holds them at (copying them again would retain and release both tables),
    /// as the gate showed it (`current`, ``GateState/handlesVersion``), which then takes no lock.
    func committedHandles(unlessAt known: UInt64?, current: UInt64) -> CommittedHandles? {
        if known == current { return nil }
        handlesLock.lock()
        defer { handlesLock.unlock() }
        return committed.version == known ? nil : committed
    }

    /// Adds handles a committed transaction opened. Takes the gate's lock, then the handles'
    /// (``deleteDatabases(_:in:)``'s order), to move the version the gate shows readers.
    func addHandles(_ opened: [String: MDB_dbi?]) {
        guard !opened.isEmpty else { return }
        gate.lock()
        defer { gate.unlock() }
        handlesLock.lock()
        defer { handlesLock.unlock() }
        committed.all.merge(opened) { old, _ in old }
        committed.version &+= 1
        gated.handlesVersion = committed.version
        let prefix = StoreFormat.rowsDatabase("")
        for (name, handle) in opened where name.hasPrefix(prefix) {
            if let handle, committed.rowsByEntity[String(name.dropFirst(prefix.count))] == nil {
                committed.rowsByEntity[String(name.dropFirst(prefix.count))] = handle
            }
        }
    }

    /// Deletes named databases in the write transaction `txn` and forgets their handles, only
    /// while no other transaction of this process is live: `mdb_drop` closes a deleted
    /// database's handle for the whole process at once, so a transaction using it would fail.
    /// Returns false, having done nothing, otherwise. The gate stays locked throughout, so no
    /// transaction begins in between; one beginning after finds the names gone from the
    /// committed handles and, if its snapshot still has them, reopens them (``refreshHandles()``)
    /// once the write ends, committed or rolled back.
    func deleteDatabases(_ databases: [(name: String, handle: MDB_dbi)], in txn: MDBTxn) throws -> Bool {
        gate.lock()
        defer { gate.unlock() }
        guard gated.activeCount == 1 else { return false }
        handlesLock.lock()
        committed.deletions &+= 1
        committed.version &+= 1
        gated.handlesVersion = committed.version
        writeHints = WriteHints()
        let prefix = StoreFormat.rowsDatabase("")
        for database in databases {
            committed.all[database.name] = nil
            if database.name.hasPrefix(prefix) { committed.rowsByEntity[String(database.name.dropFirst(prefix.count))] = nil }
        }
        handlesLock.unlock()
        for database in databases {
            try txn.delete(database: database.handle, "delete the named database \"\(database.name)\"")
        }
        return true
    }

    // MARK: - Entity descriptions and the newest sequence

    func cachedDescription(_ entity: String, at transactionID: Int) -> EntityDescription?? {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        guard let entry = cache.descriptions[entity], entry.transactionID == transactionID else { return nil }
        return .some(entry.description)
    }

    func cacheDescription(_ entity: String, _ description: EntityDescription?, at transactionID: Int) {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        cacheLocked(entity, description, at: transactionID)
    }

    /// The change log's newest change set as of commit `transactionID`, when known.
    func cachedCommit(at transactionID: Int) -> CommitPosition? {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        guard let entry = cache.sequence, entry.transactionID == transactionID else { return nil }
        return entry.commit
    }

    func cacheCommit(_ commit: CommitPosition, at transactionID: Int) {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        if let entry = cache.sequence, entry.transactionID > transactionID { return }
        cache.sequence = (transactionID, commit)
    }

    /// The column renames as of commit `transactionID`, when known.
    func cachedRenames(at transactionID: Int) -> StoreRenames? {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        guard let entry = cache.renames, entry.transactionID == transactionID else { return nil }
        return entry.renames
    }

    func cacheRenames(_ renames: StoreRenames, at transactionID: Int) {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        if let entry = cache.renames, entry.transactionID > transactionID { return }
        cache.renames = (transactionID, renames)
    }

    /// After this process's write transaction `commit` (begun on snapshot `snapshot`)
    /// committed: descriptions cached as of the snapshot are still the state, except those
    /// the transaction `changed`; so is the newest sequence, unless it `recorded` one, and so
    /// are the column renames, unless it `renamed` (then those are the state).
    /// One lock, no per-transaction copies.
    func advanceDescriptions(from snapshot: Int, to commit: Int, changed: [String: EntityDescription], recorded: CommitPosition?,
                             renamed: StoreRenames? = nil) {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        if let renamed {
            cache.renames = (commit, renamed)
        } else if let entry = cache.renames, entry.transactionID == snapshot {
            cache.renames = (commit, entry.renames)
        }
        if let recorded {
            cache.sequence = (commit, recorded)
        } else if let entry = cache.sequence, entry.transactionID == snapshot {
            cache.sequence = (commit, entry.commit)
        }
        // Walk by index, changing values in place: no copy of the dictionary.
        var index = cache.descriptions.startIndex
        while index != cache.descriptions.endIndex {
            if cache.descriptions.values[index].transactionID == snapshot {
                cache.descriptions.values[index].transactionID = commit
            }
            index = cache.descriptions.index(after: index)
        }
        for (entity, description) in changed { cacheLocked(entity, description, at: commit) }
    }

    private func cacheLocked(_ entity: String, _ description: EntityDescription?, at transactionID: Int) {
        if let entry = cache.descriptions[entity], entry.transactionID > transactionID { return }
        cache.descriptions[entity] = (transactionID, description)
    }

    /// Opens committed.all for named databases other processes created since this process last
    /// looked, in a short read transaction of its own (so the reader that noticed them can
    /// start again with every handle valid).
    func refreshHandles() throws {
        try lockOpener("another process created named databases (entities or indexes) that a read inside this thread's write would need; LMDB cannot open them while the write is open, so read them outside the write closure")
        defer { unlockOpener() }
        let (txn, known) = try LMDBErrors.convert(path: path) {
            try beginTransaction(readOnly: true) { committedHandles() }
        }
        defer { exit() }
        try LMDBErrors.convert(path: path) {
            var opened: [String: MDB_dbi?] = [:]
            do {
                let names = try txn.withCursor(CLMDB_MAIN_DBI, "open a cursor on the main database") { cursor in
                    var names: [String] = []
                    var record = try cursor.first()
                    while let current = record {
                        let name = String(decoding: current.key, as: UTF8.self)
                        if known[name] == nil { names.append(name) }
                        record = try cursor.next()
                    }
                    return names
                }
                for name in names {
                    // One that cannot be opened is recorded as not a database.
                    let handle: MDB_dbi? = (try? txn.openDatabase(name, create: false)) ?? nil
                    opened[name] = .some(handle)
                }
            } catch {
                txn.abort()
                throw error
            }
            // Committing a read transaction keeps the committed.all it opened.
            try check(txn.commit(), "keep the committed.all of named databases")
            addHandles(opened)
        }
    }
}
