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
    // @unchecked: mutable state is guarded by `gate`, `handlesLock` and `openerLock`;
    // the MDB_env is thread-safe for the calls made on it under those rules.
    // @exclusivity(unchecked) on state under those locks: see ChangeHub.

    let path: String
    let options: LMDBOptions
    /// Opened read-only because the files are not writable (not because `mode=readonly` asked).
    let readOnlyByPermission: Bool
    let env: OpaquePointer
    let maxKeySize: Int
    let pageSize: Int
    /// The committed column layouts this process has met (see ``RowLayout``).
    let layouts = LayoutRegistry()
    private let writerLockFD: Int32
    /// data.mdb, lock.mdb and reservoir-writer.lock as opened. A process that finds one
    /// deleted makes a new one: a new lock.mdb or writer lock no longer serialises its
    /// writers with ours, and a new data.mdb holds other data. Checked when the store is
    /// probed and when a write begins (`.gone`).
    private let files: [FileIdentity]

    /// Serialises writers in this process.
    private let writerMutex = NSLock()
    private let writerOwner = Locked<pthread_t?>(nil)

    // The gate: live transactions per thread, and whether a resize is waiting.
    private let gate = NSCondition()
    @exclusivity(unchecked) private var activeByThread: [pthread_t: Int] = [:]
    @exclusivity(unchecked) private var activeCount = 0
    @exclusivity(unchecked) private var resizing = false
    @exclusivity(unchecked) private var isShutDown = false
    private var currentMapSize: Int
    /// How often this process grew the map, and followed another process's growth.
    private var growths = 0
    private var adoptions = 0

    // Named-database handles known to be committed, by name (nil: not a database).
    private let handlesLock = NSLock()
    @exclusivity(unchecked) private var handles: [String: MDB_dbi?] = [:]
    @exclusivity(unchecked) private var rowsByEntity: [String: MDB_dbi] = [:]

    /// Held by the transaction that may call `mdb_dbi_open` (the writer, or a refresh).
    private let openerLock = NSLock()
    private let openerOwner = Locked<pthread_t?>(nil)

    private var references = 0
    /// Reader slots of dead processes cleared when the environment was opened.
    let staleReadersCleared: Int

    // MARK: - Shared instances

    private static let registry = Locked<[String: LMDBEnvironment]>([:])

    /// The environment at `path`, opened on first use and shared afterwards.
    /// Options of later opens do not change an environment already open in this process.
    static func acquire(path: String, options: LMDBOptions) throws -> LMDBEnvironment {
        try registry.withLock { environments in
            let key = try prepareDirectory(path, creating: !options.readOnly)
            if let existing = environments[key] {
                existing.references += 1
                return existing
            }
            let environment = try LMDBEnvironment(path: key, options: options)
            environment.references = 1
            environments[key] = environment
            return environment
        }
    }

    /// Drops one reference; the last one closes the environment. The registry stays
    /// locked until it is closed, so the directory is never open twice in this process
    /// (closing one handle would drop the other's file locks).
    func release() {
        Self.registry.withLock { environments in
            references -= 1
            guard references == 0 else { return }
            if shutDown() { environments[path] = nil }
        }
    }

    // MARK: - Opening

    /// Checks the location and creates the directory when its parent exists; returns the
    /// canonical path.
    private static func prepareDirectory(_ path: String, creating: Bool) throws -> String {
        guard !path.isEmpty else {
            throw ReservoirError(.invalidConfiguration, "lmdb: needs a location: the path of an environment directory, as in lmdb:./app.lmdb")
        }
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw ReservoirError(.cannotOpen, "lmdb:\(path): is a file, not a directory; lmdb: expects an environment directory (it holds data.mdb and lock.mdb)", nativeCode: ENOTDIR, nativeMessage: LMDBErrors.message(ENOTDIR))
            }
            let contents = (try? manager.contentsOfDirectory(atPath: path)) ?? []
            let visible = contents.filter { !$0.hasPrefix(".") }
            if !visible.isEmpty && !contents.contains("data.mdb") {
                throw ReservoirError(.cannotOpen, "lmdb:\(path): is not an LMDB environment: the directory holds other files (\(visible.sorted().prefix(3).joined(separator: ", "))) and no data.mdb; give an empty or new directory")
            }
        } else if !creating {
            throw ReservoirError(.cannotOpen, "lmdb:\(path): no environment to open read-only: the directory does not exist", nativeCode: ENOENT, nativeMessage: LMDBErrors.message(ENOENT))
        } else {
            let parentPath = Self.parent(of: path)
            var parentIsDirectory: ObjCBool = false
            guard manager.fileExists(atPath: parentPath, isDirectory: &parentIsDirectory), parentIsDirectory.boolValue else {
                throw ReservoirError(.cannotOpen, "lmdb:\(path): the parent directory \(parentPath) does not exist; create it first", nativeCode: ENOENT, nativeMessage: LMDBErrors.message(ENOENT))
            }
            if mkdir(path, 0o755) != 0 && errno != EEXIST {
                let code = errno
                throw LMDBErrors.error(code: code, "lmdb:\(path): cannot create the environment directory")
            }
        }
        guard let resolved = realpath(path, nil) else {
            let code = errno
            throw LMDBErrors.error(code: code, "lmdb:\(path): cannot resolve the path")
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The directory holding `path`: what comes before its last component ("." when none).
    /// Written on the path's scalars: NSString's `deletingLastPathComponent` trapped on a
    /// path like `a//🙂` (found by the configuration fuzzer).
    static func parent(of path: String) -> String {
        var scalars = Array(path.unicodeScalars)
        while scalars.count > 1, scalars.last == "/" { scalars.removeLast() }
        guard let slash = scalars.lastIndex(of: "/") else { return "." }
        var parent = Array(scalars[..<slash])
        while parent.count > 1, parent.last == "/" { parent.removeLast() }
        if parent.isEmpty { return "/" }
        var text = ""
        text.unicodeScalars.append(contentsOf: parent)
        return text
    }

    private init(path: String, options requested: LMDBOptions) throws {
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
            throw LMDBErrors.error(code: rc, "lmdb:\(path): cannot create an environment handle")
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
            var message = "lmdb:\(path): cannot open the environment"
            if rc == EAGAIN || rc == EBUSY {
                message += "; its lock file is held"
            } else if rc == CLMDB_INVALID || rc == CLMDB_VERSION_MISMATCH {
                message += "; data.mdb or lock.mdb is not an LMDB file of this version (delete lock.mdb if no process uses the environment)"
            }
            throw LMDBErrors.error(code: rc, message)
        }
        // A data.mdb shorter than its own pages (truncated by a copy, a full disk, a hand)
        // would make the first read of a missing page a SIGBUS: refuse it now instead.
        if let damage = Self.truncation(env: env, path: path) ?? Self.pageDamage(env: env, path: path, depth: nil) {
            mdb_env_close(env)
            throw damage
        }
        // Clear reader slots left by processes that died with a read transaction open.
        var dead: Int32 = 0
        _ = mdb_reader_check(env, &dead)
        staleReadersCleared = Int(dead)
        self.env = env
        maxKeySize = Int(mdb_env_get_maxkeysize(env))
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        currentMapSize = info.me_mapsize
        let lockPath = path + "/reservoir-writer.lock"
        let fd = options.readOnly ? open(lockPath, O_RDONLY | O_CLOEXEC) : open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 || options.readOnly else {
            let code = errno
            mdb_env_close(env)
            throw LMDBErrors.error(code: code, "lmdb:\(path): cannot open the writer lock file \(lockPath)")
        }
        writerLockFD = fd
        do {
            files = try ["data.mdb", "lock.mdb", "reservoir-writer.lock"]
                .filter { !options.readOnly || FileManager.default.fileExists(atPath: path + "/" + $0) }
                .map { try FileIdentity(path: path + "/" + $0, store: "lmdb:\(path)") }
        } catch {
            mdb_env_close(env)
            close(fd)
            throw error
        }
        do {
            // A read-only environment cannot be given its metadata; one that has none reads as empty.
            if !options.readOnly { try initializeMetadata() }
        } catch {
            mdb_env_close(env)
            close(fd)
            throw error
        }
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
    private func shutDown() -> Bool {
        // Wait for transactions still running on other threads, then close.
        gate.lock()
        isShutDown = true
        let deadline = Date().addingTimeInterval(10)
        while activeCount > 0 {
            if !gate.wait(until: deadline) { break }
        }
        let idle = activeCount == 0
        if !idle { isShutDown = false }
        gate.unlock()
        // A transaction that never ends keeps the environment: keeping it is better than crashing.
        guard idle else { return false }
        mdb_env_close(env)
        close(writerLockFD)
        return true
    }

    // MARK: - Writer locks

    /// Runs `body` holding this process's writer mutex and the cross-process writer lock.
    func withWriterLocks<R>(_ body: () throws -> R) throws -> R {
        if let owner = writerOwner.withLock({ $0 }), pthread_equal(owner, pthread_self()) != 0 {
            throw ReservoirError(.misuse, "lmdb:\(path): a write was started inside another write's closure on the same environment; do all the work in the outer transaction")
        }
        writerMutex.lock()
        writerOwner.withLock { $0 = pthread_self() }
        defer {
            writerOwner.withLock { $0 = nil }
            writerMutex.unlock()
        }
        while clmdb_flock_exclusive(writerLockFD) != 0 {
            let code = errno
            guard code == EINTR else {
                throw LMDBErrors.error(code: code, "lmdb:\(path): cannot lock reservoir-writer.lock for writing")
            }
        }
        defer { _ = clmdb_flock_unlock(writerLockFD) }
        try checkFiles()
        try lockOpener("a write was started while this thread is already writing to the environment")
        defer { unlockOpener() }
        return try body()
    }

    private func lockOpener(_ misuse: @autoclosure () -> String) throws {
        if let owner = openerOwner.withLock({ $0 }), pthread_equal(owner, pthread_self()) != 0 {
            throw ReservoirError(.misuse, "lmdb:\(path): " + misuse())
        }
        openerLock.lock()
        openerOwner.withLock { $0 = pthread_self() }
    }

    private func unlockOpener() {
        openerOwner.withLock { $0 = nil }
        openerLock.unlock()
    }

    // MARK: - The gate

    /// Counts a transaction as live; waits while the map is being resized.
    /// Throws `.closed` once the environment is shutting down.
    func enter() throws {
        gate.lock()
        defer { gate.unlock() }
        let me = pthread_self()
        while resizing && activeByThread[me] == nil { gate.wait() }
        if isShutDown {
            throw ReservoirError(.closed, "lmdb:\(path): the store has been closed")
        }
        activeByThread[me, default: 0] += 1
        activeCount += 1
    }

    func exit() {
        gate.lock()
        defer { gate.unlock() }
        let me = pthread_self()
        if let count = activeByThread[me] {
            activeByThread[me] = count > 1 ? count - 1 : nil
        }
        activeCount -= 1
        if activeCount == 0 { gate.broadcast() }
    }

    /// Runs `body` (which calls `mdb_env_set_mapsize`) once no transaction is live in this process.
    private func whileNoTransactions(_ reason: String, _ body: () throws -> Void) throws {
        gate.lock()
        defer { gate.unlock() }
        if activeByThread[pthread_self()] != nil {
            throw ReservoirError(.busy, "lmdb:\(path): the map must be \(reason), which needs every transaction in this process ended, but this thread has a read open on the environment (a write inside a read closure?); write outside the read")
        }
        resizing = true
        defer {
            resizing = false
            gate.broadcast()
        }
        let deadline = Date().addingTimeInterval(30)
        while activeCount > 0 {
            if !gate.wait(until: deadline) {
                throw ReservoirError(.busy, "lmdb:\(path): the map must be \(reason), but read transactions in this process stayed open for 30 s")
            }
        }
        try body()
    }

    /// Doubles the map (up to the configured maximum). Call with no transaction of this
    /// thread live. Throws `.full` naming the sizes when it may not grow further.
    func growMap() throws {
        // Readers of dead processes pin old pages; freeing them may be all the room needed,
        // but grow anyway: the write that filled the map is about to be replayed.
        var dead: Int32 = 0
        _ = mdb_reader_check(env, &dead)
        try whileNoTransactions("grown") {
            let current = currentMapSize
            guard current < options.maxMapSize else {
                throw ReservoirError(
                    .full,
                    "lmdb:\(path): the map is full at \(current) bytes and may not grow beyond maxmapsize (\(options.maxMapSize) bytes); raise maxmapsize or delete data",
                    nativeCode: CLMDB_MAP_FULL, nativeMessage: LMDBErrors.message(CLMDB_MAP_FULL))
            }
            var target = min(options.maxMapSize, current.multipliedReportingOverflow(by: 2).overflow ? Int.max : current * 2)
            target = max(current + pageSize, target / pageSize * pageSize)
            let rc = mdb_env_set_mapsize(env, target)
            if rc != 0 {
                throw LMDBErrors.error(code: rc, "lmdb:\(path): cannot grow the map from \(current) to \(target) bytes")
            }
            currentMapSize = mapSizeNow()
            growths += 1
        }
    }

    /// Adopts the larger map another process grew to (after `MDB_MAP_RESIZED`).
    func adoptMapSize() throws {
        try whileNoTransactions("remapped to the size another process grew it to") {
            let rc = mdb_env_set_mapsize(env, 0)
            if rc != 0 {
                throw LMDBErrors.error(code: rc, "lmdb:\(path): cannot adopt the map size another process set")
            }
            currentMapSize = mapSizeNow()
            adoptions += 1
        }
    }

    private func mapSizeNow() -> Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }

    /// How often this process grew the map, and how often it followed another process's growth.
    var resizes: (grown: Int, followed: Int) {
        gate.lock()
        defer { gate.unlock() }
        return (growths, adoptions)
    }

    /// The current map size in bytes.
    var mapSize: Int {
        gate.lock()
        defer { gate.unlock() }
        return currentMapSize
    }

    /// Throws `.gone` when a file this environment opened was deleted or replaced.
    func checkFiles() throws {
        for file in files { try file.check(store: "lmdb:\(path)") }
    }

    /// The id of the last committed transaction, whichever process committed it.
    func lastTransactionID() throws -> UInt64 {
        try checkFiles()
        try enter()
        defer { exit() }
        // The id a new reader would see, not `mdb_env_info`'s: that one comes from the newest
        // meta page, which a commit writes a moment before it publishes the id to readers
        // (in lock.mdb), and a probe in between would move the token while a read still saw
        // the old data, losing the wake-up.
        var transaction: OpaquePointer?
        let rc = mdb_txn_begin(env, nil, CLMDB_RDONLY, &transaction)
        guard rc == 0, let transaction else { throw LMDBErrors.error(code: rc, "lmdb:\(path): cannot begin a read transaction") }
        defer { mdb_txn_abort(transaction) }
        return UInt64(mdb_txn_id(transaction))
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

    // MARK: - Named-database handles

    /// The committed handles, for a transaction about to begin.
    func committedHandles() -> [String: MDB_dbi?] {
        handlesLock.lock()
        defer { handlesLock.unlock() }
        return handles
    }

    /// The committed handles, and those of entities' row databases by entity name.
    func committedHandlesAndRows() -> ([String: MDB_dbi?], [String: MDB_dbi]) {
        handlesLock.lock()
        defer { handlesLock.unlock() }
        return (handles, rowsByEntity)
    }

    /// Adds handles a committed transaction opened.
    func addHandles(_ opened: [String: MDB_dbi?]) {
        guard !opened.isEmpty else { return }
        handlesLock.lock()
        defer { handlesLock.unlock() }
        handles.merge(opened) { old, _ in old }
        let prefix = Catalog.rowsDatabase("")
        for (name, handle) in opened where name.hasPrefix(prefix) {
            if let handle, rowsByEntity[String(name.dropFirst(prefix.count))] == nil {
                rowsByEntity[String(name.dropFirst(prefix.count))] = handle
            }
        }
    }

    // MARK: - Entity descriptions

    /// Stored entity descriptions as of a committed transaction id: valid for every
    /// transaction that sees exactly that commit.
    private let descriptionsLock = NSLock()
    @exclusivity(unchecked) private var descriptionCache: [String: (transactionID: Int, description: EntityDescription?)] = [:]
    /// The change log's newest sequence as of a committed transaction id, under the same
    /// rule: every write reads it to number its change set.
    @exclusivity(unchecked) private var sequenceCache: (transactionID: Int, sequence: UInt64)?

    func cachedDescription(_ entity: String, at transactionID: Int) -> EntityDescription?? {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        guard let entry = descriptionCache[entity], entry.transactionID == transactionID else { return nil }
        return .some(entry.description)
    }

    func cacheDescription(_ entity: String, _ description: EntityDescription?, at transactionID: Int) {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        cacheLocked(entity, description, at: transactionID)
    }

    /// The change log's newest sequence as of commit `transactionID`, when known.
    func cachedSequence(at transactionID: Int) -> UInt64? {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        guard let entry = sequenceCache, entry.transactionID == transactionID else { return nil }
        return entry.sequence
    }

    func cacheSequence(_ sequence: UInt64, at transactionID: Int) {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        if let entry = sequenceCache, entry.transactionID > transactionID { return }
        sequenceCache = (transactionID, sequence)
    }

    /// After this process's write transaction `commit` (begun on snapshot `snapshot`)
    /// committed: descriptions cached as of the snapshot are still the state, except those
    /// the transaction `changed`; so is the newest sequence, unless it `recorded` one.
    /// One lock, no per-transaction copies.
    func advanceDescriptions(from snapshot: Int, to commit: Int, changed: [String: EntityDescription], recorded: UInt64?) {
        descriptionsLock.lock()
        defer { descriptionsLock.unlock() }
        if let recorded {
            sequenceCache = (commit, recorded)
        } else if let entry = sequenceCache, entry.transactionID == snapshot {
            sequenceCache = (commit, entry.sequence)
        }
        // Walk by index, changing values in place: no copy of the dictionary.
        var index = descriptionCache.startIndex
        while index != descriptionCache.endIndex {
            if descriptionCache.values[index].transactionID == snapshot {
                descriptionCache.values[index].transactionID = commit
            }
            index = descriptionCache.index(after: index)
        }
        for (entity, description) in changed { cacheLocked(entity, description, at: commit) }
    }

    private func cacheLocked(_ entity: String, _ description: EntityDescription?, at transactionID: Int) {
        if let entry = descriptionCache[entity], entry.transactionID > transactionID { return }
        descriptionCache[entity] = (transactionID, description)
    }

    /// Opens handles for named databases other processes created since this process last
    /// looked, in a short read transaction of its own (so the reader that noticed them can
    /// start again with every handle valid).
    func refreshHandles() throws {
        try lockOpener("another process created named databases (entities or indexes) that a read inside this thread's write would need; LMDB cannot open them while the write is open, so read them outside the write closure")
        defer { unlockOpener() }
        while true {
            try enter()
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn)
            if rc == CLMDB_MAP_RESIZED {
                exit()
                try adoptMapSize()
                continue
            }
            defer { exit() }
            try LMDBErrors.convert(path: path) {
                try check(rc, "begin a read transaction")
                guard let txn else { return }
                var opened: [String: MDB_dbi?] = [:]
                do {
                    let known = committedHandles()
                    var cursor: OpaquePointer?
                    try check(mdb_cursor_open(txn, CLMDB_MAIN_DBI, &cursor), "open a cursor on the main database")
                    var key = MDB_val()
                    var data = MDB_val()
                    var op = MDB_FIRST
                    var names: [String] = []
                    while mdb_cursor_get(cursor, &key, &data, op) == 0 {
                        op = MDB_NEXT
                        let name = String(decoding: UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size), as: UTF8.self)
                        if known[name] == nil { names.append(name) }
                    }
                    mdb_cursor_close(cursor)
                    for name in names {
                        var dbi = MDB_dbi()
                        opened[name] = mdb_dbi_open(txn, name, 0, &dbi) == 0 ? dbi : MDB_dbi?.none
                    }
                } catch {
                    mdb_txn_abort(txn)
                    throw error
                }
                // Committing a read transaction keeps the handles it opened.
                try check(mdb_txn_commit(txn), "keep the handles of named databases")
                addHandles(opened)
            }
            return
        }
    }
}
