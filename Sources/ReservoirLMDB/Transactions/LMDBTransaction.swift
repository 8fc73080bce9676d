import CLMDB
import Foundation
import Reservoir

/// One LMDB transaction (`MDB_txn`), read-only or the write transaction.
///
/// The roles live in their own files: reading (`+Read`, and `+Fetch` in `Query/`), writing
/// (`+Write`), recording and replaying writes when the map fills (`+Replay`), and the record
/// access every role shares (`+Records`). The C calls themselves are ``MDBTxn``'s.
///
/// All state below is confined to the thread running the transaction's closure (a
/// transaction is not `Sendable` and never leaves its closure), so no lock guards it; each
/// group says what else it depends on. `@exclusivity(unchecked)`: see ChangeHub (the suite
/// ran clean with the checks on).
final class LMDBTransaction: WriteTransaction {
    /// Named-database handles as this transaction sees them. Those opened by a write
    /// become the environment's when it commits; the rest are caches, dropped when the LMDB
    /// transaction ends (a replay begins a new one).
    struct Handles {
        /// Committed before the transaction began (nil: not a database). Kept after it ends,
        /// so that a late use finds a handle and fails as a use after the end.
        var committed: [String: MDB_dbi?] = [:]
        /// Opened by this write transaction.
        var opened: [String: MDB_dbi] = [:]
        /// Row databases by entity name, and the one looked up last. A read transaction kept
        /// for reuse keeps `lastRows` while no database was deleted (``LMDBEnvironment/CommittedHandles/deletions``
        /// is still `deletions`): a run of point reads of one entity then hashes no name.
        var rows: [String: MDB_dbi] = [:]
        var lastRows: (entity: String, handle: MDB_dbi)?
        var deletions: UInt64 = 0
        /// The environment's ``LMDBEnvironment/CommittedHandles/version`` `committed` and `rows`
        /// were copied at: a reused read transaction keeps both while it has not moved (a read
        /// adds to `rows` only what `committed` holds). Nil in a write, which opens databases.
        var committedVersion: UInt64?
        /// Index databases by entity and column: a transaction uses a few, so a list, where
        /// a dictionary of dictionaries allocated two on a commit's first lookup.
        var indexes: [(entity: String, column: String, handle: MDB_dbi)] = []
        /// The change log's, once looked up: every commit reads and writes it.
        var log: MDB_dbi?
        /// A write's: the environment's ``LMDBEnvironment/writeHints`` as it began, and the
        /// databases it used, which become the hints once it commits.
        var hints = LMDBEnvironment.WriteHints()
        var used = LMDBEnvironment.WriteHints()
        /// Whether `hints` name databases known to exist in this write's snapshot
        /// (``LMDBEnvironment/WriteHints/confirmedAt``), so that using one checks nothing.
        var hintsConfirmed = false
        /// The entity the last put went to, as an index into the replay log's entities, its
        /// row database, whether it has indexes, and the least layout number its rows may name
        /// (see ``LMDBTransaction/putTarget(_:)``).
        var lastPut: (entity: Int, rows: MDB_dbi, indexed: Bool, floor: UInt32)?
        /// Committed databases a write found still there, by handle (see
        /// ``LMDBTransaction/requireExisting(_:_:)``): a write uses a few, so a list, where a
        /// set of names hashed and allocated on every commit.
        var verified: [MDB_dbi] = []

        /// Forgets what the ended LMDB transaction opened or looked up; a read keeps `rows` and
        /// `lastRows` for the next transaction to check (``committedVersion``, ``deletions``).
        mutating func forgetLookUps(keepingRows: Bool = false) {
            // Emptied only when they hold something: a point read touches none but `rows`.
            if !verified.isEmpty { verified = [] }
            if !opened.isEmpty { opened = [:] }
            if !keepingRows {
                if !rows.isEmpty { rows = [:] }
                lastRows = nil
                committedVersion = nil
            }
            if !indexes.isEmpty { indexes = [] }
            log = nil
            lastPut = nil
            // A replay begins again: what the aborted transaction opened is gone.
            if used.rows != nil || used.log != nil || !used.indexes.isEmpty { used = LMDBEnvironment.WriteHints() }
        }
    }

    /// Entity descriptions this transaction wrote or read; valid for its snapshot.
    struct Descriptions {
        /// Stored by this write transaction; they override the snapshot's.
        var written: [String: EntityDescription] = [:]
        /// The description looked up last: repeated lookups skip the environment's lock.
        var last: (entity: String, description: EntityDescription?)?
        /// The description the last put made sure of, as an index into the replay log's entities.
        var lastEnsured: Int?
    }

    /// Row decoding and the column layouts rows are written in (see ``RowLayout``).
    struct RowCoding {
        /// Decodes rows, keeping the last layout it met.
        var reader = StoredRowDecoder()
        /// The row ``withRow(_:id:_:)`` lends, refilled in place for each point read. The
        /// transaction object is reused across reads, so the row's storage is too.
        var lent = Row()
        /// Stored by this write transaction; they join the environment's registry when it commits.
        var addedLayouts: [RowLayout] = []
        /// The columns of the last row put, and the number of the layout it was written in.
        var lastWrittenColumns: [String] = []
        var lastWrittenNumber: UInt32?
        /// Every entity's columns renamed in place as of commit `renamesAt`, once looked up (see
        /// ``RenameHistory``), and whether there are any; `renamed` when this write renamed some.
        /// A read transaction reused for the same commit keeps them.
        var renames: StoreRenames?
        var renamesAt = -1
        var anyRenames = false
        var renamed = false
        /// The history looked up last (of ``renames``): the rows a transaction reads are
        /// usually one entity's, so the next lookup compares the name without hashing it.
        var lastHistory: (entity: String, history: RenameHistory?)?

        /// Forgets what the ended LMDB transaction stored (a replay stores it again).
        mutating func forgetWrites() {
            addedLayouts = []
            lastWrittenColumns = []
            lastWrittenNumber = nil
            // A replay makes its renames again. (A reused read checks `renamesAt`; the reader
            // keeps its layout, checking the history it was read through.)
            if renamed {
                renames = nil
                renamesAt = -1
                renamed = false
                lastHistory = nil
            }
        }
    }

    /// Which commit this transaction sees and which it makes. (Not named `Snapshot`, which
    /// would shadow the core's public `Snapshot` in every extension of this class.)
    struct SnapshotState {
        /// The id of the commit the snapshot shows.
        var id = 0
        /// The id this write transaction's commit gets; a replay must begin with the same.
        var writeID = 0
        /// The sequence this write transaction logged, once it has.
        var recordedCommit: CommitPosition?
    }

    let environment: LMDBEnvironment
    let isWrite: Bool
    @exclusivity(unchecked) private(set) var txn: MDBTxn?
    /// Whether this transaction is counted in the environment's gate.
    @exclusivity(unchecked) private var inGate = false
    @exclusivity(unchecked) var handles = Handles()
    @exclusivity(unchecked) var descriptions = Descriptions()
    @exclusivity(unchecked) var rowCoding = RowCoding()
    @exclusivity(unchecked) var snapshot = SnapshotState()
    /// Where `MDB_APPEND` may be used (see ``putRow(_:_:_:floor:onlyNew:)``).
    @exclusivity(unchecked) var appending = Appending()
    /// Reused for encoding index keys.
    @exclusivity(unchecked) var keyScratch: [UInt8] = []
    /// The write's operations, to replay when the map fills (see `+Replay`).
    @exclusivity(unchecked) var replay = ReplayLog()

    var path: String { environment.path }

    private init(environment: LMDBEnvironment, isWrite: Bool) {
        self.environment = environment
        self.isWrite = isWrite
    }

    deinit { end() }

    // MARK: - Lifecycle

    /// Begins a read transaction whose handles cover every named database in its snapshot, in
    /// the object the environment kept with the idle reader it renews when there is one (an
    /// ended read transaction nothing else held, ``end(reusable:)``), in a new one otherwise.
    static func beginRead(in environment: LMDBEnvironment) throws -> LMDBTransaction {
        var refreshes = 0
        while true {
            let (txn, kept, fetched) = try LMDBErrors.convert(path: environment.path) {
                try environment.beginRead { kept, current in
                    environment.committedHandles(unlessAt: kept.flatMap { $0.canBeginRead(in: environment) ? $0.handles.committedVersion : nil },
                                                 current: current)
                }
            }
            let transaction: LMDBTransaction
            if let kept, kept.canBeginRead(in: environment) {
                transaction = kept
                transaction.snapshot = SnapshotState()
            } else {
                transaction = LMDBTransaction(environment: environment, isWrite: false)
            }
            if let fetched {
                transaction.handles.committed = fetched.all
                transaction.handles.rows = fetched.rowsByEntity
                transaction.handles.committedVersion = fetched.version
                if transaction.handles.deletions != fetched.deletions {
                    transaction.handles.lastRows = nil
                    transaction.handles.deletions = fetched.deletions
                }
            }
            do {
                try environment.checkNotTruncated()
            } catch {
                txn.abort()
                environment.exit()
                throw error
            }
            let stat = Result { try txn.stat(CLMDB_MAIN_DBI, "read the list of named databases") }
            if case .success(let named) = stat, named.ms_entries <= transaction.handles.committed.count {
                transaction.txn = txn
                transaction.inGate = true
                transaction.snapshot.id = txn.id
                return transaction
            }
            txn.abort()
            environment.exit()
            _ = try LMDBErrors.convert(path: environment.path) { try stat.get() }
            refreshes += 1
            if refreshes > 50 {
                throw ReservoirError(.backend, "\(lmdbStore(environment.path)): the list of named databases kept changing while opening a read transaction")
            }
            try environment.refreshHandles()
        }
    }

    /// Whether this is an ended read transaction of `environment`, which a read may begin in.
    private func canBeginRead(in environment: LMDBEnvironment) -> Bool {
        self.environment === environment && !isWrite && txn == nil && !inGate
    }

    /// Begins the write transaction. The caller holds the environment's writer locks. A
    /// `rerunnable` one keeps no operation to replay (``ReplayLog/keepsOperations``).
    convenience init(writingIn environment: LMDBEnvironment, rerunnable: Bool = false) throws {
        self.init(environment: environment, isWrite: true)
        replay.keepsOperations = !rerunnable
        try LMDBErrors.convert(path: environment.path) { try beginWriteTransaction() }
        if let txn {
            snapshot.writeID = txn.id
            snapshot.id = snapshot.writeID - 1
        }
    }

    /// Begins (or, replaying, begins again) the LMDB write transaction.
    func beginWriteTransaction() throws {
        let (txn, (known, rows, _)) = try environment.beginTransaction(readOnly: false) { environment.committedHandlesAndRows() }
        handles.committed = known
        handles.rows = rows
        handles.hints = environment.writeHints
        handles.hintsConfirmed = handles.hints.confirmed(for: txn.id)
        self.txn = txn
        inGate = true
        try environment.checkNotTruncated()  // end() aborts the transaction
    }

    /// Aborts the transaction if it is still open and leaves the gate. Safe to call twice.
    /// A read `reusable` (nothing but its caller holds it) is kept by the environment with its
    /// reset LMDB transaction, for a later read to begin in.
    func end(reusable: Bool = false) {
        // Already ended (a commit ends before deinit does): the caches were cleared then.
        guard txn != nil || inGate else { return }
        // The caches first: once the environment keeps this object, another thread may take it.
        handles.forgetLookUps(keepingRows: !isWrite)
        if descriptions.last != nil || !descriptions.written.isEmpty || descriptions.lastEnsured != nil { descriptions = Descriptions() }
        rowCoding.forgetWrites()
        appending.target = nil
        if !isWrite, let txn, inGate {
            // A read: kept for the next read to renew, when the environment keeps it.
            self.txn = nil
            inGate = false
            environment.exit(endingRead: txn, keeping: reusable ? self : nil)
            return
        }
        if let txn {
            txn.abort()
            self.txn = nil
        }
        if inGate {
            inGate = false
            environment.exit()
        }
    }

    /// Commits the write transaction, growing the map and replaying when it is full.
    func commit() throws {
        if let poisoned = replay.poisoned { throw poisoned }
        while true {
            guard let txn else {
                throw ReservoirError(.misuse, "\(lmdbStore(path)): commit of a transaction that has ended")
            }
            let rc = txn.commit()
            self.txn = nil  // freed by LMDB whatever the outcome
            let committed = handles.opened
            let used = handles.used
            let changed = descriptions.written
            let layouts = rowCoding.addedLayouts
            let renamed = rowCoding.renamed ? rowCoding.renames : nil
            end()
            if rc == 0 {
                if !committed.isEmpty { environment.addHandles(committed.mapValues { Optional($0) }) }
                environment.writeHints = used
                if !layouts.isEmpty { environment.layouts.add(layouts) }
                // LMDB publishes nothing for a write that dirtied no page (an empty or no-op
                // write): its id then goes to the next real commit, whichever process makes it.
                // Caching this write's state under that id would let readers here take the
                // stale sequence and descriptions for that later commit's (a second store
                // missed another's commit, and a write here could reuse its sequence). The
                // writer lock is still held, so the newest meta names our commit if it landed.
                if environment.lastCommittedID() == snapshot.writeID {
                    environment.writeHints.confirmedAt = snapshot.writeID
                    environment.advanceDescriptions(from: snapshot.id, to: snapshot.writeID, changed: changed, recorded: snapshot.recordedCommit,
                                                    renamed: renamed)
                }
                return
            }
            guard rc == CLMDB_MAP_FULL else {
                throw environment.diagnoseWriteFailure(code: rc, "\(lmdbStore(path)): cannot commit the write transaction; nothing was committed")
            }
            guard replay.keepsOperations else { throw mapFilledForRerun() }
            try rebuild(grow: true)
        }
    }

    /// The open LMDB transaction; throws when it has ended or a failed write poisoned it.
    @inline(__always)
    func liveTransaction() throws -> MDBTxn {
        if let poisoned = replay.poisoned { throw poisoned }
        guard let txn else {
            throw ReservoirError(.misuse, "\(lmdbStore(path)): a transaction was used after it ended; use it only inside its closure")
        }
        return txn
    }

    // MARK: - Named databases

    /// The handle of a named database, or nil when it does not exist (and `create` is false).
    func database(_ name: String, create: Bool = false) throws -> MDB_dbi? {
        if let known = handles.committed[name] {
            if isWrite, let known { try requireExisting(known, name) }
            return known
        }
        if let handle = handles.opened[name] { return handle }
        guard isWrite, let txn else { return nil }
        guard let dbi = try txn.openDatabase(name, create: create) else { return nil }
        handles.opened[name] = dbi
        return dbi
    }

    /// The change log's database (cached).
    func logDatabase(create: Bool = false) throws -> MDB_dbi? {
        if let log = handles.log { return log }
        if isWrite, let hint = handles.hints.log {
            if !handles.hintsConfirmed { try requireExisting(hint, StoreFormat.logDatabase) }
            handles.log = hint
        } else {
            handles.log = try database(StoreFormat.logDatabase, create: create)
        }
        if isWrite { handles.used.log = handles.log }
        return handles.log
    }

    /// The row database of `entity` (cached by entity name).
    func rowsDatabase(_ entity: String, create: Bool = false) throws -> MDB_dbi? {
        // Most transactions touch one entity: skip hashing its name.
        if let last = handles.lastRows, last.entity == entity { return last.handle }
        if isWrite, let hint = handles.hints.rows, hint.entity == entity {
            if !handles.hintsConfirmed { try requireExisting(hint.handle, hint.name) }
            handles.lastRows = (entity, hint.handle)
            handles.used.rows = hint
            return hint.handle
        }
        if let handle = handles.rows[entity] {
            if isWrite {
                let name = StoreFormat.rowsDatabase(entity)
                try requireExisting(handle, name)
                handles.used.rows = (entity, name, handle)
            }
            handles.lastRows = (entity, handle)
            return handle
        }
        let name = StoreFormat.rowsDatabase(entity)
        guard let handle = try database(name, create: create) else { return nil }
        handles.rows[entity] = handle
        handles.lastRows = (entity, handle)
        if isWrite { handles.used.rows = (entity, name, handle) }
        return handle
    }

    /// Throws when the committed database `name` no longer exists: another process's migration
    /// deleted it (a renamed or merged entity, ``applyDropEntity(_:)``) while this process kept
    /// its handle, which LMDB cannot reopen or close safely while other transactions may hold
    /// it. Reading through it finds nothing, but writing through it would damage the
    /// environment, so a write checks each committed database once before using it.
    /// `name` is built only when `handle` was not checked yet in this write.
    @inline(__always)
    func requireExisting(_ handle: MDB_dbi, _ name: @autoclosure () -> String) throws {
        guard !handles.verified.contains(handle) else { return }
        try checkExisting(handle, name())
    }

    private func checkExisting(_ handle: MDB_dbi, _ name: String) throws {
        let txn = try liveTransaction()
        let found: Bool
        do {
            var key = name
            found = try key.withUTF8 { try txn.get(CLMDB_MAIN_DBI, UnsafeRawBufferPointer($0)) } != nil
        } catch let failure as LMDBFailure where failure.code == MDB_INCOMPATIBLE {
            found = true  // a named database's record, which some LMDB versions refuse to read as data
        }
        guard found else {
            throw ReservoirError(.invalidSchema, "\(lmdbStore(path)): the named database \"\(name)\" was deleted by another process (a migration renamed or merged its entity) while this process kept it open; reopen the store to write to it")
        }
        handles.verified.append(handle)
    }

    /// The index database of `entity`'s `column` (cached).
    func indexDatabase(_ entity: String, _ column: String, create: Bool = false) throws -> MDB_dbi? {
        if let known = handles.indexes.first(where: { $0.entity == entity && $0.column == column }) { return known.handle }
        if isWrite, let hint = handles.hints.indexes.first(where: { $0.entity == entity && $0.column == column }) {
            if !handles.hintsConfirmed { try requireExisting(hint.handle, hint.name) }
            handles.indexes.append((entity, column, hint.handle))
            handles.used.indexes.append(hint)
            return hint.handle
        }
        let name = StoreFormat.indexDatabase(entity, column)
        guard let handle = try database(name, create: create) else { return nil }
        handles.indexes.append((entity, column, handle))
        if isWrite { handles.used.indexes.append((entity, column, name, handle)) }
        return handle
    }
}
