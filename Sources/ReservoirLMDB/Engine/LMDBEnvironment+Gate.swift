import CLMDB
import Foundation
import Reservoir

/// The writer locks, and the gate that lets the map be resized only while no transaction
/// of this process is live (`mdb_env_set_mapsize`'s rule).
extension LMDBEnvironment {
    // MARK: - Writer locks

    /// Runs `body` holding this process's writer mutex and the cross-process writer lock.
    func withWriterLocks<R>(_ body: () throws -> R) throws -> R {
        if let owner = writerOwner.withLock({ $0 }), pthread_equal(owner, pthread_self()) != 0 {
            throw ReservoirError(.misuse, "\(lmdbStore(path)): a write was started inside another write's closure on the same environment; do all the work in the outer transaction")
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
                throw LMDBErrors.error(code: code, "\(lmdbStore(path)): cannot lock reservoir-writer.lock for writing")
            }
        }
        defer { _ = clmdb_flock_unlock(writerLockFD) }
        try checkFiles()
        try lockOpener("a write was started while this thread is already writing to the environment")
        defer { unlockOpener() }
        return try body()
    }

    func lockOpener(_ misuse: @autoclosure () -> String) throws {
        if let owner = openerOwner.withLock({ $0 }), pthread_equal(owner, pthread_self()) != 0 {
            throw ReservoirError(.misuse, "\(lmdbStore(path)): " + misuse())
        }
        openerLock.lock()
        openerOwner.withLock { $0 = pthread_self() }
    }

    func unlockOpener() {
        openerOwner.withLock { $0 = nil }
        openerLock.unlock()
    }

    // MARK: - The gate

    /// Counts a transaction as live; waits while the map is being resized.
    /// Throws `.closed` once the environment is shutting down.
    func enter() throws {
        _ = try enter(takingIdleReader: false)
    }

    /// ``enter()``, also taking an idle read transaction to renew when `takingIdleReader`
    /// and one is kept (see ``idleReaders``), and the committed handles' version then.
    private func enter(takingIdleReader: Bool) throws -> (IdleReader?, handlesVersion: UInt64) {
        gate.lock()
        defer { gate.unlock() }
        let me = pthread_self()
        while gated.resizing && gated.position(of: me) == nil { gate.wait() }
        if gated.isShutDown {
            throw ReservoirError.closed(store: "lmdb:" + path)
        }
        gated.enter(me)
        return (takingIdleReader ? idleReaders.popLast() : nil, gated.handlesVersion)
    }

    /// Ends a read transaction and leaves the gate: the transaction is reset
    /// (`mdb_txn_reset`, which releases its snapshot) and kept for the next read to renew,
    /// with `transaction` (an ended read transaction object nothing else holds) for that read
    /// to begin in, or aborted when enough are kept or the map is about to change.
    func exit(endingRead txn: MDBTxn, keeping transaction: LMDBTransaction? = nil) {
        gate.lock()
        defer { gate.unlock() }
        if idleReaders.count < Self.idleReaderLimit && !gated.resizing && !gated.isShutDown {
            mdb_txn_reset(txn.raw)
            idleReaders.append(IdleReader(txn: txn.raw, transaction: transaction))
        } else {
            txn.abort()
        }
        leaveGate()
    }

    /// Aborts the idle read transactions and lets their objects go (which hold this
    /// environment); the caller holds ``gate``. Before the map changes or the environment
    /// closes, so no reset transaction outlives the map it was made on.
    func dropIdleReaders() {
        for idle in idleReaders { mdb_txn_abort(idle.txn) }
        idleReaders = []
    }

    func exit() {
        gate.lock()
        defer { gate.unlock() }
        leaveGate()
    }

    /// ``exit()``'s work; the caller holds ``gate``. Only a resize and a shutdown wait for the
    /// last transaction to end, each having set its flag under the lock before it waits.
    private func leaveGate() {
        gated.exit(pthread_self())
        if gated.activeCount == 0 && (gated.resizing || gated.isShutDown) { gate.broadcast() }
    }

    /// Runs `body` (which calls `mdb_env_set_mapsize`) once no transaction is live in this process.
    private func whileNoTransactions(_ reason: String, _ body: () throws -> Void) throws {
        gate.lock()
        defer { gate.unlock() }
        if gated.position(of: pthread_self()) != nil {
            throw ReservoirError(.busy, "\(lmdbStore(path)): the map must be \(reason), which needs every transaction in this process ended, but this thread has a read open on the environment (a write inside a read closure?); write outside the read")
        }
        gated.resizing = true
        defer {
            gated.resizing = false
            gate.broadcast()
        }
        dropIdleReaders()
        let deadline = Date().addingTimeInterval(30)
        while gated.activeCount > 0 {
            if !gate.wait(until: deadline) {
                throw ReservoirError(.busy, "\(lmdbStore(path)): the map must be \(reason), but read transactions in this process stayed open for 30 s")
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
            let current = gated.mapSize
            guard current < options.maxMapSize else {
                throw ReservoirError(
                    .full,
                    "\(lmdbStore(path)): the map is full at \(current) bytes and may not grow beyond maxmapsize (\(options.maxMapSize) bytes); raise maxmapsize or delete data",
                    nativeCode: CLMDB_MAP_FULL, nativeMessage: LMDBErrors.message(CLMDB_MAP_FULL))
            }
            var target = min(options.maxMapSize, current.multipliedReportingOverflow(by: 2).overflow ? Int.max : current * 2)
            target = max(current + pageSize, target / pageSize * pageSize)
            let rc = mdb_env_set_mapsize(env, target)
            if rc != 0 {
                throw LMDBErrors.error(code: rc, "\(lmdbStore(path)): cannot grow the map from \(current) to \(target) bytes")
            }
            gated.mapSize = mapSizeNow()
            gated.growths += 1
        }
    }

    /// How many times the pages in use ``growMapAhead()`` makes room for: a write that copies
    /// every page (the old ones stay until it commits) and builds an index as large again needs
    /// about three; at twice, a migration of 1,000,000 records that adds an index filled the map.
    static let aheadFactor = 4

    /// Grows the map, before a write that may copy every page in use (a migration), to at least
    /// ``aheadFactor`` times the pages in use (doubling, as ``growMap()`` does, within
    /// maxmapsize), so that it rarely fills and runs again. Only when no transaction of this
    /// process is live: unlike a write that filled the map, this one need not wait for readers,
    /// and does not.
    func growMapAhead() throws {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        let (used, overflow) = (Int(info.me_last_pgno) + 1).multipliedReportingOverflow(by: Self.aheadFactor * pageSize)
        guard !overflow else { return }
        gate.lock()
        defer { gate.unlock() }
        let current = gated.mapSize
        // Holding the gate, no transaction can begin meanwhile.
        guard current < used, current < options.maxMapSize, gated.activeCount == 0, !gated.resizing else { return }
        var target = current
        while target < used, target < options.maxMapSize {
            target = target.multipliedReportingOverflow(by: 2).overflow ? options.maxMapSize : min(options.maxMapSize, target * 2)
        }
        target = max(current, target / pageSize * pageSize)
        guard target > current else { return }
        dropIdleReaders()
        let rc = mdb_env_set_mapsize(env, target)
        if rc != 0 {
            throw LMDBErrors.error(code: rc, "\(lmdbStore(path)): cannot grow the map from \(current) to \(target) bytes")
        }
        gated.mapSize = mapSizeNow()
        gated.growths += 1
    }

    /// Adopts the larger map another process grew to (after `MDB_MAP_RESIZED`).
    func adoptMapSize() throws {
        try whileNoTransactions("remapped to the size another process grew it to") {
            let rc = mdb_env_set_mapsize(env, 0)
            if rc != 0 {
                throw LMDBErrors.error(code: rc, "\(lmdbStore(path)): cannot adopt the map size another process set")
            }
            gated.mapSize = mapSizeNow()
            gated.adoptions += 1
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
        return (gated.growths, gated.adoptions)
    }

    /// The current map size in bytes.
    var mapSize: Int {
        gate.lock()
        defer { gate.unlock() }
        return gated.mapSize
    }


    /// Begins an LMDB transaction counted in the gate. When another process grew the map
    /// (`MDB_MAP_RESIZED`), leaves the gate, adopts the new size and tries again.
    /// `prepare` runs in the gate before each attempt: what it reads (the committed handles)
    /// is then as of before the transaction's snapshot. On failure the gate is left and an
    /// ``LMDBFailure`` (or the gate's `.closed`) thrown; on success the caller ends the
    /// transaction and then calls ``exit()``.
    /// A read transaction is an idle one renewed when one is kept (``idleReaders``).
    func beginTransaction<Prepared>(readOnly: Bool, _ prepare: () -> Prepared) throws -> (MDBTxn, Prepared) {
        let (txn, _, prepared) = try begin(readOnly: readOnly) { _, _ in prepare() }
        return (txn, prepared)
    }

    /// ``beginTransaction(readOnly:_:)`` for a read, which also gets the transaction object
    /// kept with the idle reader it renews, if any (``exit(endingRead:keeping:)``); `prepare`
    /// is given it too, with the committed handles' version the gate showed
    /// (``GateState/handlesVersion``). Taking them under the gate's lock, which the read takes
    /// anyway, saves a lock of their own on each side of every read.
    func beginRead<Prepared>(_ prepare: (LMDBTransaction?, UInt64) -> Prepared) throws -> (MDBTxn, LMDBTransaction?, Prepared) {
        try begin(readOnly: true, prepare)
    }

    private func begin<Prepared>(readOnly: Bool, _ prepare: (LMDBTransaction?, UInt64) -> Prepared) throws -> (MDBTxn, LMDBTransaction?, Prepared) {
        while true {
            let (idleReader, handlesVersion) = try enter(takingIdleReader: readOnly)
            // Taken apart once, the kept object moved out: reading `idleReader?.transaction` for
            // `prepare` and again for the result copied it twice (a retain and a release each).
            let idleTxn = idleReader?.txn
            let kept = (consume idleReader)?.transaction
            let prepared = prepare(kept, handlesVersion)
            var txn: OpaquePointer?
            let rc: Int32
            if let idle = idleTxn {
                rc = mdb_txn_renew(idle)
                if rc == 0 { txn = idle } else { mdb_txn_abort(idle) }
            } else {
                rc = mdb_txn_begin(env, nil, readOnly ? CLMDB_RDONLY : 0, &txn)
            }
            if rc == CLMDB_MAP_RESIZED {
                exit()
                try adoptMapSize()
                continue
            }
            guard rc == 0, let txn else {
                exit()
                throw LMDBFailure(code: rc, operation: readOnly ? "begin a read transaction" : "begin a write transaction")
            }
            return (MDBTxn(raw: txn), kept, prepared)
        }
    }
}
