import Foundation
import Reservoir

/// A write whose `COMMIT` lost its answer: its server transaction, and the sequence and
/// commit identity of the change set it logged (0: it logged none).
struct PendingCommit: Sendable {
    let transaction: Int64
    let sequence: UInt64
    let commit: UInt64
}

/// A `COMMIT` whose answer was lost with the connection (Backends.md § PostgreSQL, faults):
/// the server may or may not have committed. The writer reads its transaction's id
/// (`txid_current()`) with the write lock, so the store can ask the server's commit log
/// (`txid_status`) on a new connection instead of guessing.
///
/// The id alone is not enough after a crash: a server that went down before any of the
/// transaction's WAL reached disk has never heard of its id, and after recovery hands the same
/// id to a new transaction, whose outcome `txid_status` then reports (the PostgreSQL fault
/// loop met "committed" for writes that were not there). So a "committed" is believed only
/// when the change log holds the write's change set: its sequence with its commit identity (a
/// random 64-bit number made for it). A write that changed nothing logged nothing, and nothing
/// of it can be missing.
extension PostgresBackend {
    /// Resolves the write whose `COMMIT` lost its answer (`lost`, a `.commitOutcomeUnknown`
    /// from the connection): returns when the server committed it; throws `.backend` when the
    /// server rolled it back; throws `.commitOutcomeUnknown` naming the transaction when the
    /// server cannot say within ``PostgresOptions/timeout`` seconds. Call under `writerLock`.
    func resolveCommit(_ lost: ReservoirError, _ pending: PendingCommit) throws {
        let transaction = pending.transaction
        let cause = lost.nativeMessage ?? lost.message
        switch transactionStatus(pending, until: .now + .seconds(options.timeout)) {
        case true?:
            return
        case false?:
            throw ReservoirError(.backend, "\(server.name): the connection was lost during COMMIT (\(cause)); the server rolled the transaction back, so nothing of it is committed")
        case nil:
            unresolved.withLock { $0 = pending }
            throw ReservoirError(.commitOutcomeUnknown, "\(server.name): the connection was lost during COMMIT of server transaction \(transaction) (change set \(pending.sequence)) and the server could not say within \(options.timeout) s whether it committed (\(cause)); it may have: if it did, its change set reaches live subscriptions from the change log once the server answers, and commitOutcome(ofTransaction: \(transaction)) says which")
        }
    }

    /// Whether server transaction `transaction` (``unresolvedCommit``, named in a
    /// `.commitOutcomeUnknown` message) committed: true or false once the server knows, nil
    /// while it is still in progress (a stopped server process still holds it). For the
    /// store's unresolved write, a "committed" is checked against the change log, since a
    /// server that crashed may have given its id to another transaction. Throws when the
    /// server cannot be reached, or `.notFound` when it no longer remembers the transaction.
    public func commitOutcome(ofTransaction transaction: Int64) throws -> Bool? {
        let pending = unresolved.withLock { $0 }.flatMap { $0.transaction == transaction ? $0 : nil }
        return try outcome(pending ?? PendingCommit(transaction: transaction, sequence: 0, commit: 0))
    }

    func outcome(_ pending: PendingCommit) throws -> Bool? {
        let connection = try connect()
        let status: String?
        do {
            status = try connection.execute("SELECT txid_status(\(pending.transaction))").text(0, 0)
        } catch let error as ReservoirError where error.nativeCode == PGFailure.packed("22023") && (error.nativeMessage ?? error.message).contains("in the future") {
            // An id the server has not handed out: a crash lost it before any of its WAL was
            // written, commit record included.
            return false
        }
        switch status {
        case "committed"?:
            return pending.commit == 0 ? true : try isLogged(pending, on: connection)
        case "aborted"?: return false
        case "in progress"?: return nil
        default:
            throw ReservoirError(.notFound, "\(server.name): the server no longer remembers transaction \(pending.transaction) (its commit log has been truncated); read the store to see whether the write is there")
        }
    }

    /// Whether the change log holds `pending`'s change set (its sequence with its commit
    /// identity). A log trimmed past that sequence (``PostgresOptions/retention``) cannot say:
    /// the server's "committed" is taken then.
    private func isLogged(_ pending: PendingCommit, on connection: PGConnection) throws -> Bool {
        let found = try connection.execute("""
            SELECT count(*) FILTER (WHERE sequence = \(pending.sequence) AND commit_id = \(Int64(bitPattern: pending.commit))), \
            min(sequence) FROM \(layout.changes)
            """)
        if found.text(0, 0).flatMap({ Int($0) }) ?? 0 > 0 { return true }
        return found.text(0, 1).flatMap { UInt64($0) }.map { $0 > pending.sequence } ?? false
    }

    /// Asks on new connections, until `deadline`, whether `pending` committed; nil when no
    /// answer came (no server, or the transaction still in progress).
    private func transactionStatus(_ pending: PendingCommit, until deadline: ContinuousClock.Instant) -> Bool? {
        var pause = Duration.milliseconds(10)
        while true {
            if let known = try? outcome(pending) { return known }
            // A server process whose client vanished ends its transaction once it notices:
            // ask again, a little later each time.
            guard ContinuousClock.now + pause < deadline else { return nil }
            Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18 + Double(pause.components.seconds))
            pause = min(pause * 2, .milliseconds(500))
        }
    }
}
