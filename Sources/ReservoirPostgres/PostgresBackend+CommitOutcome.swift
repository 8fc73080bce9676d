import Foundation
import Reservoir

/// A `COMMIT` whose answer was lost with the connection (Backends.md § PostgreSQL, faults):
/// the server may or may not have committed. The writer reads its transaction's id
/// (`txid_current()`) with the write lock, so the store can ask the server's commit log
/// (`txid_status`) on a new connection instead of guessing.
extension PostgresBackend {
    /// Resolves the write whose `COMMIT` lost its answer (`lost`, a `.commitOutcomeUnknown`
    /// from the connection): returns when the server committed it; throws `.backend` when the
    /// server rolled it back; throws `.commitOutcomeUnknown` naming the transaction when the
    /// server cannot say within ``PostgresOptions/timeout`` seconds. Call under `writerLock`.
    func resolveCommit(_ lost: ReservoirError, sequence: UInt64) throws {
        let transaction = writerTransaction
        let cause = lost.nativeMessage ?? lost.message
        switch transactionStatus(transaction, until: .now + .seconds(options.timeout)) {
        case true?:
            return
        case false?:
            throw ReservoirError(.backend, "\(server.name): the connection was lost during COMMIT (\(cause)); the server rolled the transaction back, so nothing of it is committed")
        case nil:
            unresolved.withLock { $0 = transaction }
            throw ReservoirError(.commitOutcomeUnknown, "\(server.name): the connection was lost during COMMIT of server transaction \(transaction) (change set \(sequence)) and the server could not say within \(options.timeout) s whether it committed (\(cause)); it may have: if it did, its change set reaches live subscriptions from the change log once the server answers, and commitOutcome(ofTransaction: \(transaction)) says which")
        }
    }

    /// Whether server transaction `transaction` (``unresolvedCommit``, named in a
    /// `.commitOutcomeUnknown` message) committed: true or false once the server knows, nil
    /// while it is still in progress (a stopped server process still holds it). Throws when
    /// the server cannot be reached, or `.notFound` when it no longer remembers the transaction.
    public func commitOutcome(ofTransaction transaction: Int64) throws -> Bool? {
        let connection = try connect()
        let status = try connection.execute("SELECT txid_status(\(transaction))").text(0, 0)
        switch status {
        case "committed"?: return true
        case "aborted"?: return false
        case "in progress"?: return nil
        default:
            throw ReservoirError(.notFound, "\(server.name): the server no longer remembers transaction \(transaction) (its commit log has been truncated); read the store to see whether the write is there")
        }
    }

    /// Asks on new connections, until `deadline`, whether `transaction` committed; nil when no
    /// answer came (no server, or the transaction still in progress).
    private func transactionStatus(_ transaction: Int64, until deadline: ContinuousClock.Instant) -> Bool? {
        var pause = Duration.milliseconds(10)
        while true {
            if let known = try? commitOutcome(ofTransaction: transaction) { return known }
            // A server process whose client vanished ends its transaction once it notices:
            // ask again, a little later each time.
            guard ContinuousClock.now + pause < deadline else { return nil }
            Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18 + Double(pause.components.seconds))
            pause = min(pause * 2, .milliseconds(500))
        }
    }
}
