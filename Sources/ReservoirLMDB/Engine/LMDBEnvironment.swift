import CLMDB
import Foundation
import Reservoir

/// Owns one `MDB_env`: opened in `init`, closed when the last backend on it is closed.
///
/// LMDB must not open the same environment twice in one process (closing the second
/// handle would drop the first one's locks), so backends on the same directory share
/// one environment through ``acquire(path:options:)``.
///
/// Besides the handle it keeps what LMDB leaves to the caller:
/// - the *gate*, counting live transactions in this process, because the map may only be
///   resized (`mdb_env_set_mapsize`) while none is active;
/// - the named-database handles (`MDB_dbi`) this process has opened, because a handle
///   may only be opened by one transaction at a time and only becomes visible to
///   transactions begun after it was committed;
/// - the writer locks: a mutex in this process and `flock` on `reservoir-writer.lock`
///   across processes, held for the whole write so that growing the map (which ends the
///   LMDB transaction and starts another) never lets another writer in between.
final class LMDBEnvironment: @unchecked Sendable {
    // @unchecked: mutable state is guarded by the lock each group below names; the
    // MDB_env is thread-safe for the calls made on it under those rules.
    // @exclusivity(unchecked) on state under those locks: see ChangeHub.

    /// What the gate counts and what gated.resizing the map records. Guarded by ``gate``.
    struct GateState {
        /// Live transactions per thread (only threads with one; a handful at most, so a
        /// list scanned with `pthread_equal`, where a dictionary hashed on every entry and
        /// exit), and in all.
        var activeByThread: [(thread: pthread_t, count: Int)] = []
        var activeCount = 0

        /// Where `thread` is in ``activeByThread``.
        func position(of thread: pthread_t) -> Int? {
            activeByThread.firstIndex { pthread_equal($0.thread, thread) != 0 }
        }

        /// Counts a transaction of `thread` as live.
        mutating func enter(_ thread: pthread_t) {
            if let position = position(of: thread) {
                activeByThread[position].count += 1
            } else {
                activeByThread.append((thread, 1))
            }
            activeCount += 1
        }

        /// Counts a transaction of `thread` as ended.
        mutating func exit(_ thread: pthread_t) {
            if let position = position(of: thread) {
                if activeByThread[position].count > 1 {
                    activeByThread[position].count -= 1
                } else {
                    activeByThread.swapAt(position, activeByThread.count - 1)
                    activeByThread.removeLast()
                }
            }
            activeCount -= 1
        }
        /// ``CommittedHandles/version``, set with it (under both locks): a read whose kept
        /// transaction holds the handles at this version takes them without the handles' lock.
        var handlesVersion: UInt64 = 0
        /// A resize is waiting for the live transactions to end.
        var resizing = false
        var isShutDown = false
        var mapSize: Int
        /// How often this process grew the map, and followed another process's growth.
        var growths = 0
        var adoptions = 0
    }

    /// Named-database handles known to be committed. Guarded by ``handlesLock``.
    struct CommittedHandles {
        /// By name (nil: not a database).
        var all: [String: MDB_dbi?] = [:]
        /// Those of entities' row databases, by entity name. An entry, once made, stays the
        /// same until its database is deleted.
        var rowsByEntity: [String: MDB_dbi] = [:]
        /// How many times databases were deleted (their handles forgotten, and their slots
        /// free for LMDB to give another database): a row handle a reused read transaction
        /// remembers is still the entity's while this has not moved.
        var deletions: UInt64 = 0
        /// Moves whenever ``all`` or ``rowsByEntity`` changes.
        var version: UInt64 = 0
    }

    /// Stored entity descriptions and the change log's newest sequence, each as of a
    /// committed transaction id: valid for every transaction that sees exactly that commit.
    /// Every write reads both (to check its entity, to number its change set). Guarded by
    /// ``descriptionsLock``.
    struct SnapshotCache {
        var descriptions: [String: (transactionID: Int, description: EntityDescription?)] = [:]
        var sequence: (transactionID: Int, commit: CommitPosition)?
        /// Every entity's columns renamed in place (``StoreRenames``).
        var renames: (transactionID: Int, renames: StoreRenames)?
    }

    let path: String
    let options: LMDBOptions
    /// Opened read-only because the files are not writable (not because `mode=readonly` asked).
    let readOnlyByPermission: Bool
    let env: OpaquePointer
    let maxKeySize: Int
    let pageSize: Int
    /// The committed column layouts this process has met (see ``RowLayout``).
    let layouts = LayoutRegistry()
    let writerLockFD: Int32
    /// data.mdb opened a second time, read-only, for its size alone: `lseek(SEEK_END)` on it
    /// costs a third of an `fstat` (0.10 µs against 0.30 on the test VM), and every
    /// transaction's start asks (``checkNotTruncated()``). LMDB's own descriptor is never
    /// seeked: its writes position it. -1 when it could not be opened as the same file
    /// LMDB has open; then `fstat` on LMDB's serves.
    let sizeFD: Int32
    /// The environment's page size as LMDB reads pages (the file's, which may not be this
    /// system's ``pageSize``), asked once: the truncation check at every transaction's start
    /// needs it. Nil when LMDB did not answer, and the check asks each time.
    let filePageSize: Int?
    /// data.mdb, lock.mdb and reservoir-writer.lock as opened. A process that finds one
    /// deleted makes a new one: a new lock.mdb or writer lock no longer serialises its
    /// writers with ours, and a new data.mdb holds other data. Checked when the store is
    /// probed and when a write begins (`.gone`), usually by one `stat` of the directory.
    private let files: DirectoryFiles

    /// Serialises writers in this process.
    let writerMutex = NSLock()
    let writerOwner = Locked<pthread_t?>(nil)

    let gate = NSCondition()
    @exclusivity(unchecked) var gated: GateState
    /// Read transactions ended with `mdb_txn_reset`, kept for the next read to renew
    /// (`mdb_txn_renew`), which keeps the reader slot where `mdb_txn_begin` looks for a free
    /// one in lock.mdb's table under its mutex. Not live (they hold no snapshot), so the gate
    /// does not count them; dropped before the map is resized and before the environment
    /// closes. Guarded by ``gate``.
    @exclusivity(unchecked) var idleReaders: [IdleReader] = []

    /// An idle read transaction, and the ended read transaction object kept with it for the
    /// next read to begin in (making, setting up and freeing one cost a point read about a
    /// tenth of its instructions); nil when the read that ended it had no object to give back.
    struct IdleReader {
        let txn: OpaquePointer
        let transaction: LMDBTransaction?
    }
    /// At most this many idle read transactions, each holding a reader slot (`maxreaders`).
    static let idleReaderLimit = 4

    let handlesLock = NSLock()
    @exclusivity(unchecked) var committed = CommittedHandles()

    /// The databases the last committed write used, with their names, for the next write to
    /// find without building and hashing those names (a single-record commit spent about a
    /// tenth of its instructions on that). Only writers touch it, under the writer locks.
    /// Replaced whole by each commit, so it names only handles in use when the last write
    /// committed; emptied when this process deletes databases, and a write that deletes some
    /// drops what it used before.
    @exclusivity(unchecked) var writeHints = WriteHints()

    struct WriteHints {
        var rows: (entity: String, name: String, handle: MDB_dbi)?
        var indexes: [(entity: String, column: String, name: String, handle: MDB_dbi)] = []
        var log: MDB_dbi?
        /// The LMDB transaction id of the write that used these databases, when its commit was
        /// published: each existed then (that write checked or created it). A write beginning
        /// on that very commit (its own id one more: no process committed in between, so none
        /// deleted a database) uses them unchecked; any other write checks each once, by name,
        /// as any committed handle is (``LMDBTransaction/requireExisting(_:_:)``). The check
        /// was about 2,700 instructions of a single-record commit's 44,000.
        var confirmedAt: Int?

        /// Whether a write whose LMDB transaction has `writeID` may use these unchecked.
        func confirmed(for writeID: Int) -> Bool { confirmedAt.map { $0 == writeID - 1 } ?? false }
    }

    let descriptionsLock = NSLock()
    @exclusivity(unchecked) var cache = SnapshotCache()

    /// Held by the transaction that may call `mdb_dbi_open` (the writer, or a refresh).
    let openerLock = NSLock()
    let openerOwner = Locked<pthread_t?>(nil)

    /// Backends sharing this environment. Guarded by the registry's lock (`+Registry`).
    var references = 0
    /// Reader slots of dead processes cleared when the environment was opened.
    let staleReadersCleared: Int

    init(path: String, options requested: LMDBOptions) throws {
        self.path = path
        var options = requested
        // A directory or data.mdb this process may not write opens read-only, rather than not at all.
        readOnlyByPermission = !options.readOnly
            && (access(path, W_OK) != 0 || (FileManager.default.fileExists(atPath: path + "/data.mdb") && access(path + "/data.mdb", W_OK) != 0))
        if readOnlyByPermission { options.readOnly = true }
        self.options = options
        var handle: OpaquePointer?
        var rc = mdb_env_create(&handle)
        guard rc == 0, let env = handle else {
            throw LMDBErrors.error(code: rc, "\(lmdbStore(path)): cannot create an environment handle")
        }
        // mdb_env_open trusts the meta pages' page size (0 is a division by zero): check it first.
        if let problem = PageCheck.metaPageSizeProblem(path: path) {
            mdb_env_close(env)
            throw ReservoirError(.corrupt, "\(lmdbStore(path)): data.mdb is damaged: \(problem); restore it from a copy",
                                 nativeCode: CLMDB_CORRUPTED, nativeMessage: LMDBErrors.message(CLMDB_CORRUPTED))
        }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        pageSize = page > 0 ? page : 4096
        let minimum = 16 * pageSize
        // Options set in code skip the parser's bound: clamp before rounding up to a page.
        let requested = min(options.mapSize, LMDBOptions.largestMapSize)
        let initial = max(minimum, (requested + pageSize - 1) / pageSize * pageSize)
        var flags = CLMDB_NOTLS
        switch options.durability {
        case .none: flags |= CLMDB_NOSYNC
        case .normal: flags |= CLMDB_NOMETASYNC
        case .full: break
        }
        if options.readOnly { flags |= CLMDB_RDONLY }
        // A lock.mdb this process may not write: read without reader slots (Backends.md § LMDB, "Read-only").
        if readOnlyByPermission, access(path + "/lock.mdb", W_OK) != 0 { flags |= CLMDB_NOLOCK }
        rc = mdb_env_set_maxreaders(env, UInt32(options.maxReaders))
        if rc == 0 { rc = mdb_env_set_maxdbs(env, MDB_dbi(options.maxDatabases)) }
        if rc == 0 { rc = mdb_env_set_mapsize(env, initial) }
        if rc == 0 { rc = mdb_env_open(env, path, flags, 0o644) }
        if rc != 0 {
            mdb_env_close(env)
            var message = "\(lmdbStore(path)): cannot open the environment"
            if rc == EAGAIN || rc == EBUSY {
                message += "; its lock file is held"
            } else if rc == CLMDB_INVALID || rc == CLMDB_VERSION_MISMATCH {
                message += "; data.mdb or lock.mdb is not an LMDB file of this version (delete lock.mdb if no process uses the environment)"
            }
            throw LMDBErrors.error(code: rc, message)
        }
        // A data.mdb shorter than its own pages (truncated by a copy, a full disk, a hand)
        // would make the first read of a missing page a SIGBUS, a damaged page an abort or a
        // fault whenever LMDB follows it: refuse both now instead.
        if let damage = Self.truncation(env: env, path: path) ?? Self.pageDamage(env: env, path: path) {
            mdb_env_close(env)
            throw damage
        }
        // Clear reader slots left by processes that died with a read transaction open.
        var dead: Int32 = 0
        _ = mdb_reader_check(env, &dead)
        staleReadersCleared = Int(dead)
        self.env = env
        sizeFD = Self.openSizeDescriptor(env: env, path: path)
        filePageSize = Self.filePageSize(env)
        maxKeySize = Int(mdb_env_get_maxkeysize(env))
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        gated = GateState(mapSize: info.me_mapsize)
        let lockPath = path + "/reservoir-writer.lock"
        let fd = options.readOnly ? open(lockPath, O_RDONLY | O_CLOEXEC) : open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 || options.readOnly else {
            let code = errno
            mdb_env_close(env)
            if sizeFD >= 0 { close(sizeFD) }
            throw LMDBErrors.error(code: code, "\(lmdbStore(path)): cannot open the writer lock file \(lockPath)")
        }
        writerLockFD = fd
        do {
            files = try DirectoryFiles(directory: path, names: ["data.mdb", "lock.mdb", "reservoir-writer.lock"]
                .filter { !options.readOnly || FileManager.default.fileExists(atPath: path + "/" + $0) }, store: lmdbStore(path))
        } catch {
            mdb_env_close(env)
            close(fd)
            if sizeFD >= 0 { close(sizeFD) }
            throw error
        }
        do {
            // A read-only environment cannot be given its metadata; one that has none reads as empty.
            if !options.readOnly { try initializeMetadata() }
        } catch {
            mdb_env_close(env)
            close(fd)
            if sizeFD >= 0 { close(sizeFD) }
            throw error
        }
    }

    /// ``sizeFD``: data.mdb opened read-only, or -1 when it cannot be, or is not the file
    /// (device and inode) LMDB has open.
    private static func openSizeDescriptor(env: OpaquePointer, path: String) -> Int32 {
        var lmdbFD: Int32 = -1
        var theirs = stat(), ours = stat()
        guard mdb_env_get_fd(env, &lmdbFD) == 0, fstat(lmdbFD, &theirs) == 0 else { return -1 }
        let fd = open(path + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        guard fstat(fd, &ours) == 0, ours.st_dev == theirs.st_dev, ours.st_ino == theirs.st_ino else {
            close(fd)
            return -1
        }
        return fd
    }

    /// Creates the metadata and change-log databases in a new environment; checks the
    /// format of an existing one.
    private func initializeMetadata() throws {
        try withWriterLocks {
            let transaction = try LMDBTransaction(writingIn: self)
            defer { transaction.end() }
            try transaction.prepareStore()
            try transaction.commit()
        }
    }

    /// Closes the handle once no transaction is live; returns false (leaving it open and
    /// registered, to be reused) when transactions stay open for 10 s.
    func shutDown() -> Bool {
        // Wait for transactions still running on other threads, then close.
        gate.lock()
        gated.isShutDown = true
        let deadline = Date().addingTimeInterval(10)
        while gated.activeCount > 0 {
            if !gate.wait(until: deadline) { break }
        }
        let idle = gated.activeCount == 0
        if idle {
            dropIdleReaders()
        } else {
            gated.isShutDown = false
        }
        gate.unlock()
        // A transaction that never ends keeps the environment: keeping it is better than crashing.
        guard idle else { return false }
        mdb_env_close(env)
        close(writerLockFD)
        if sizeFD >= 0 { close(sizeFD) }
        return true
    }


    func checkFiles() throws {
        try files.check(store: lmdbStore(path))
    }

    /// The id of the last committed transaction, whichever process committed it.
    /// The newest meta page's transaction id (`mdb_env_info`): for a writer checking, with
    /// the writer lock held, whether its own commit was published. Not for probes (see
    /// ``lastTransactionID()``).
    func lastCommittedID() -> Int {
        var info = MDB_envinfo()
        guard mdb_env_info(env, &info) == 0 else { return -1 }
        return Int(info.me_last_txnid)
    }

    func lastTransactionID() throws -> UInt64 {
        try checkFiles()
        // The id a new reader would see, not `mdb_env_info`'s: that one comes from the newest
        // meta page, which a commit writes a moment before it publishes the id to readers
        // (in lock.mdb), and a probe in between would move the token while a read still saw
        // the old data, losing the wake-up.
        let (transaction, _) = try LMDBErrors.convert(path: path) { try beginTransaction(readOnly: true) {} }
        defer { exit(endingRead: transaction) }
        return UInt64(transaction.id)
    }

    /// The error for a failed commit. LMDB reports a short write as `EIO`, which is what a
    /// full disk or a file-size limit usually looks like; those are told apart by looking.
    func diagnoseWriteFailure(code: Int32, _ message: String) -> ReservoirError {
        var error = LMDBErrors.error(code: code, message)
        guard code == EIO || code == ENOSPC || code == EFBIG || code == EDQUOT else { return error }
        var stats = statvfs()
        if statvfs(path, &stats) == 0 {
            let free = UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
            if free < UInt64(max(1 << 20, 64 * pageSize)) {
                error.code = .full
                error.message = message + "; the disk is full (\(free) bytes free)"
                return error
            }
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max,
           let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb"),
           let size = attributes[.size] as? NSNumber,
           size.uint64Value + UInt64(16 * pageSize) >= UInt64(limit.rlim_cur) {
            error.code = .full
            error.message = message + "; data.mdb (\(size) bytes) reached this process's file size limit (\(limit.rlim_cur) bytes)"
        }
        return error
    }

}
