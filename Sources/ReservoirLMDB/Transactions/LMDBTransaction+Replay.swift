import CLMDB
import Foundation
import Reservoir

/// A write's operations as recorded for replaying. Confined, like all of a transaction's
/// state, to the thread running the write's closure.
///
/// When LMDB reports the map full (`MDB_MAP_FULL`, from a put or from the commit), the
/// transaction is aborted, the map grown, a new LMDB transaction begun on the same snapshot
/// and the recorded operations replayed, so the caller's closure runs exactly once and
/// nothing is lost or doubled. The writer locks stay held throughout, so no other writer can
/// commit in between; should one have (a tool outside this library), the write fails with
/// `.busy` and nothing is committed. Replaying on the same snapshot gives every operation
/// the outcome it had, so an insert that stored its row stores it again.
struct ReplayLog {
    enum Operation {
        /// `entity` indexes ``ReplayLog/entities``: one copy of each description, not one per
        /// row. Ids are kept as values (no allocation for numbers) and encoded when applied.
        case put(entity: Int, id: Value, row: Row)
        /// An insert that stored its row; one that found its id taken wrote nothing and is
        /// not kept.
        case insert(entity: Int, id: Value, row: Row)
        case delete(entity: Int, id: Value)
        case record(ChangeSet)
        case trimLog(through: UInt64)
        case setMetadata(key: String, value: Data?)
        case prepareStore
        case dropEntity(String)
        /// A migration's field rename in place; false (nothing kept) when it renamed nothing.
        case renameColumns(entity: EntityDescription, renames: [RenameHistory.Rename], renamed: EntityDescription)
    }

    var operations: [Operation] = []
    /// False in a rerunnable write (``LMDBBackend/rerunnableWrite(_:)``): no operation is kept,
    /// so the write holds no row it wrote, and a full map ends the transaction, setting
    /// ``mapFilled``, for the backend to grow the map and run the write's closure again.
    var keepsOperations = true
    /// Set when a rerunnable write found the map full: the transaction has ended, poisoned.
    var mapFilled = false
    var entities: [EntityDescription] = []
    /// The ``EntityDescription/identity`` of the last of ``entities``.
    var lastIdentity: ObjectIdentifier?
    /// Set when an operation failed half-way and replaying the others failed too: the
    /// transaction may then only be abandoned.
    var poisoned: ReservoirError?

    /// The position of `entity` in ``entities``, adding it when it differs from the last two.
    mutating func entityIndex(_ entity: EntityDescription) -> Int {
        let last = entities.count - 1
        // A bulk write passes copies of one description: the same box as the last one's,
        // which ``entities`` keeps alive. Comparing identities copies nothing.
        if last >= 0, entity.identity == lastIdentity { return last }
        // A migration's entity rename alternates a put under the new description with a delete
        // under the old: one entry each, not one per record.
        if last >= 1, entities.withUnsafeBufferPointer({ $0[last - 1].identity == entity.identity }) { return last - 1 }
        if last >= 0, entities.withUnsafeBufferPointer({ $0[last] == entity }) { return last }
        entities.append(entity)
        lastIdentity = entity.identity
        return entities.count - 1
    }
}

extension LMDBTransaction {
    /// Applies `operation` and records it; on a full map, grows and replays everything.
    /// Returns what applying it returned: for an insert, whether it stored the row.
    @discardableResult
    func perform(_ operation: ReplayLog.Operation) throws -> Bool {
        try perform(operation) { try apply(operation) }
    }

    /// ``perform(_:)`` with `body` applying `operation`: callers pass their arguments to
    /// the apply function directly, so the operation is only built (its row retained) to
    /// be kept in the log, once it has been applied (or the map filled while applying it).
    @discardableResult @inline(__always)
    func perform(_ operation: @autoclosure () -> ReplayLog.Operation, _ body: () throws -> Bool) throws -> Bool {
        if let poisoned = replay.poisoned { throw poisoned }
        guard txn != nil else {
            throw ReservoirError(.misuse, "\(lmdbStore(path)): the write transaction has ended")
        }
        guard replay.keepsOperations else { return try performOnce(body) }
        do {
            // An insert that found its id wrote nothing: nothing to replay.
            let done = try body()
            if done { replay.operations.append(operation()) }
            return done
        } catch let failure as LMDBFailure where failure.code == CLMDB_MAP_FULL {
            replay.operations.append(operation())
            let done = try rebuild(grow: true)
            if !done { replay.operations.removeLast() }
            return done
        } catch {
            // Undo the half-applied operation by replaying the others on a fresh transaction.
            let reported = (error as? LMDBFailure).map { LMDBErrors.error($0, path: path) } ?? error
            do {
                try rebuild(grow: false)
            } catch {
                replay.poisoned = (error as? ReservoirError) ?? ReservoirError(.backend, "\(lmdbStore(path)): \(error)")
            }
            throw reported
        }
    }

    /// A rerunnable write's operation: applied, and kept nowhere. Nothing can then undo an
    /// operation that failed half-way, so any failure poisons the transaction (the closure can
    /// only throw, and the write rolls back); a full map also ends the LMDB transaction at once,
    /// freeing its dirty pages, and sets ``ReplayLog/mapFilled`` (``LMDBBackend/rerunnableWrite(_:)``
    /// grows the map and runs the closure again).
    func performOnce(_ body: () throws -> Bool) throws -> Bool {
        do {
            return try body()
        } catch let failure as LMDBFailure where failure.code == CLMDB_MAP_FULL {
            throw mapFilledForRerun()
        } catch {
            let reported = (error as? LMDBFailure).map { LMDBErrors.error($0, path: path) }
                ?? (error as? ReservoirError) ?? ReservoirError(.backend, "\(lmdbStore(path)): \(error)")
            replay.poisoned = reported
            throw reported
        }
    }

    /// Ends a rerunnable write whose map filled; returns the error its closure gets from then on.
    func mapFilledForRerun() -> ReservoirError {
        end()
        let full = ReservoirError(.full, "\(lmdbStore(path)): the map filled during a write that is run again from its start once the map has grown",
                                  nativeCode: CLMDB_MAP_FULL, nativeMessage: LMDBErrors.message(CLMDB_MAP_FULL))
        replay.mapFilled = true
        replay.poisoned = full
        return full
    }

    /// Ends the LMDB transaction, optionally grows the map, begins again on the same
    /// snapshot and replays the recorded operations. Returns what the last one returned.
    @discardableResult
    func rebuild(grow: Bool) throws -> Bool {
        var grow = grow
        do {
            while true {
                end()
                if grow { try environment.growMap() }
                try LMDBErrors.convert(path: path) { try beginWriteTransaction() }
                guard let txn, txn.id == snapshot.writeID else {
                    throw ReservoirError(.busy, "\(lmdbStore(path)): another writer outside this library committed while the map was growing; this transaction was rolled back, run it again")
                }
                do {
                    var last = true
                    // Set again by the record operation, if it is among those replayed.
                    snapshot.recordedCommit = nil
                    for operation in replay.operations { last = try apply(operation) }
                    return last
                } catch let failure as LMDBFailure where failure.code == CLMDB_MAP_FULL {
                    grow = true
                }
            }
        } catch {
            end()
            let failure = (error as? LMDBFailure).map { LMDBErrors.error($0, path: path) }
                ?? (error as? ReservoirError) ?? ReservoirError(.backend, "\(lmdbStore(path)): \(error)")
            replay.poisoned = failure
            throw failure
        }
    }

    /// Applies one operation; false only for an insert whose id was taken or a rename refused.
    private func apply(_ operation: ReplayLog.Operation) throws -> Bool {
        switch operation {
        case let .put(entity, id, row): return try applyPut(entity, id: id, row: row, onlyNew: false)
        case let .insert(entity, id, row): return try applyPut(entity, id: id, row: row, onlyNew: true)
        case let .delete(entity, id): try applyDelete(replay.entities[entity], id: id)
        case let .record(changeSet): try applyRecord(changeSet)
        case let .trimLog(cutoff): try trimLog(through: cutoff)
        case let .setMetadata(key, value): try applySetMetadata(key, value)
        case .prepareStore: try applyPrepareStore()
        case let .dropEntity(name): try applyDropEntity(name)
        case let .renameColumns(entity, renames, renamed): return try applyRenameColumns(renames, in: entity, to: renamed)
        }
        return true
    }
}
