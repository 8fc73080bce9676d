import CLMDB
import Foundation
import Reservoir

/// The change log: one record per committed change set under its sequence number (the core's
/// ``ChangeLogCodec`` record), written by the write that commits it, trimmed
/// to the retention option, and read by other processes' stores to learn what changed.
extension LMDBTransaction {
    func lastSequence() throws -> UInt64 {
        try lastCommit().sequence
    }

    func lastCommit() throws -> CommitPosition {
        _ = try liveTransaction()  // refuses a transaction used after its closure, as every other call does
        if let recorded = snapshot.recordedCommit { return recorded }
        if let cached = environment.cachedCommit(at: snapshot.id) { return cached }
        let newest = try loggedCommit(at: nil) ?? .start
        environment.cacheCommit(newest, at: snapshot.id)
        return newest
    }

    func commit(at sequence: UInt64) throws -> CommitPosition? {
        _ = try liveTransaction()
        if let recorded = snapshot.recordedCommit, recorded.sequence == sequence { return recorded }
        return try loggedCommit(at: sequence)
    }

    /// The position of the log's record `sequence` (nil: the newest), read with a cursor; nil
    /// when the log has no such record.
    private func loggedCommit(at sequence: UInt64?) throws -> CommitPosition? {
        try LMDBErrors.convert(path: path) {
            // Retention always keeps the newest record, so the log's last key is the newest sequence.
            guard let log = try logDatabase() else { return nil }
            var found: CommitPosition?
            var damaged = false
            let visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool = { key, value in
                guard let number = StoreFormat.readBigEndian(key) else {
                    damaged = true
                    return false
                }
                if sequence == nil || number == sequence {
                    found = CommitPosition(sequence: number, commit: ChangeLogCodec.commitIdentity(ofRecord: value))
                }
                return false
            }
            if let sequence {
                try scan(log, from: StoreFormat.bigEndian(sequence), visit)
            } else {
                try scan(log, reverse: true, visit)
            }
            if damaged {
                throw ReservoirError(.corrupt, "\(lmdbStore(path)): a change-log key is not a sequence number")
            }
            return found
        }
    }

    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry] {
        _ = try liveTransaction()  // an ended transaction is refused before any cache answers
        return try LMDBErrors.convert(path: path) {
            guard limit > 0, sequence < UInt64.max, let log = try database(StoreFormat.logDatabase) else { return [] }
            var entries: [ChangeLogEntry] = []
            var sets = 0
            try scan(log, from: StoreFormat.bigEndian(sequence + 1)) { key, value in
                guard let number = StoreFormat.readBigEndian(key), let decoded = StoreFormat.decodeEntries(value, sequence: number) else {
                    throw ReservoirError(.corrupt, "\(lmdbStore(path)): a change-log record cannot be decoded")
                }
                entries.append(contentsOf: decoded)
                sets += 1
                return sets < limit
            }
            return entries
        }
    }

    /// Writes the change set's log record.
    func applyRecord(_ changeSet: ChangeSet) throws {
        guard let log = try logDatabase(create: true) else { return }
        let sequence = changeSet.sequence
        _ = try withUnsafeBytes(of: sequence.bigEndian) { key in
            try putReserved(log, key, size: ChangeLogCodec.recordSize(changeSet), flags: 0, refused: false, "write a change-log record") {
                ChangeLogCodec.writeRecord(changeSet, to: $0)
            }
        }
        snapshot.recordedCommit = changeSet.position
    }

    /// Deletes the log records up to `cutoff` (``HistoryRetention`` decides which, every
    /// ``HistoryRetention/trimInterval`` commits): one cursor from the front.
    func trimLog(through cutoff: UInt64) throws {
        guard let log = try logDatabase(create: false) else { return }
        try liveTransaction().withCursor(log, "open a cursor on the change log") { cursor in
            var record = try cursor.first()
            while let current = record {
                guard let number = StoreFormat.readBigEndian(current.key), number <= cutoff else { return }
                try cursor.deleteCurrent("delete an old change-log record")
                // After a delete, MDB_NEXT returns the record that followed the deleted one.
                record = try cursor.next()
            }
        }
    }
}
