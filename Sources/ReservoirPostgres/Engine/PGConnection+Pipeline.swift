import CLibPQ
import Foundation
import Reservoir

/// One statement of a pipeline (``PGConnection/pipeline(_:)``), or the sync that ends a segment.
enum PGPipelineItem {
    /// A statement prepared on first use, parameters in binary, results in binary when `binary`.
    /// Every statement of a pipeline is one, `BEGIN` and `END` included (``Layout/begin``).
    case prepared(String, [PGParameter], binary: Bool = true)
    /// Ends a segment. The server runs each segment in turn; an error skips the rest of its
    /// segment only, so a later segment's `COMMIT` and unlock still run. (A segment outside an
    /// explicit transaction is an implicit one: a lock taken there is taken before the next
    /// segment's `BEGIN` starts its snapshot.)
    case sync
}

/// What a pipeline's statements answered.
struct PGPipelineAnswer {
    /// One entry per statement (syncs left out), in order: its result, nil when it failed or
    /// was skipped after an error in its segment, or was never answered.
    var results: [PGResult?] = []
    /// The first error the server reported for a statement.
    var failure: ReservoirError?
    /// Set when the connection failed (lost, or the call timed out) before every answer came.
    var lost: ReservoirError?

    /// Whether every statement succeeded.
    var succeeded: Bool { failure == nil && lost == nil && !results.contains { $0 == nil } }

    /// The first error: the connection's, or the server's.
    var error: ReservoirError? { lost ?? failure }
}

/// Several statements in one round trip: libpq's pipeline mode, each statement sent without
/// waiting, their answers read after the last sync. What is known up front goes out together
/// (a point read's lock, `BEGIN`, meta row and `SELECT`); what a transaction queued goes out
/// with the read that follows it. Statements whose answers nobody waits for (a read
/// transaction's `COMMIT` and unlock) are sent as a deferred tail: the server runs them at once,
/// and their answers are read at the connection's next use (``settle()``, or the next pipeline,
/// which reads them ahead of its own, in the same round trip).
extension PGConnection {
    /// Runs `items` in one pipeline (a final sync is added when missing) and returns every
    /// statement's answer; `tail` goes out in the same write, and its answers are left for the
    /// connection's next use. Throws only when preparing a statement fails (statements are
    /// prepared, a round trip each, before the pipeline on their first use by this connection).
    /// Writes still queued are sent first, in the same pipeline.
    func pipeline(_ items: [PGPipelineItem], deferring tail: [PGPipelineItem] = []) throws -> PGPipelineAnswer {
        if copyCommand != nil { try flush() }
        var items = items
        if !queued.isEmpty { items = queued.map { .prepared($0.sql, $0.parameters) } + items }
        if !items.isEmpty, !items.endsWithSync { items.append(.sync) }
        var tail = tail
        if !tail.isEmpty, !tail.endsWithSync { tail.append(.sync) }
        try checkUsable()
        var answer = PGPipelineAnswer()
        // Named statements are prepared before the pipeline (PQprepare waits for its answer,
        // after reading any deferred answers). One that fails to prepare throws with the
        // queued writes still queued: nothing was sent.
        func name(_ item: PGPipelineItem) throws -> String? {
            guard case let .prepared(sql, _, _) = item else { return nil }
            return try statementName(for: sql)
        }
        let names: [String?] = try tail.isEmpty ? items.map(name) : (items + tail).map(name)
        queued.removeAll(keepingCapacity: true)
        let deadline = deadline()
        guard PQenterPipelineMode(handle) == 1 else {
            answer.lost = connectionError()
            return answer
        }
        // What was sent, in order: a statement's SQL (for messages), or nil for a sync.
        var sent = send(items, names: names.prefix(items.count), lost: &answer.lost)
        var sentTail: [String?] = []
        if answer.lost == nil { sentTail = send(tail, names: names.suffix(tail.count), lost: &answer.lost) }
        let carried = deferred
        deferred = []
        if items.isEmpty {
            // Nothing to wait for now: the tail's answers join those still unread.
            deferred = carried + sentTail
            sent = []
        }
        do {
            try flushOutput(until: deadline)
            if !items.isEmpty {
                var ignored = PGPipelineAnswer()
                try readAnswers(carried, until: deadline, into: &ignored)
                if let error = ignored.error, answer.lost == nil {
                    // A deferred statement failed: the connection's state is unknown.
                    broken = true
                    answer.lost = error
                }
                try readAnswers(sent, until: deadline, into: &answer)
                deferred = sentTail
            }
        } catch let error as ReservoirError {
            if answer.lost == nil { answer.lost = error }
            deferred = []
        }
        if deferred.isEmpty, !broken { _ = PQexitPipelineMode(handle) }
        let statements = items.count(where: { if case .sync = $0 { false } else { true } })
        while answer.results.count < statements { answer.results.append(nil) }
        if answer.lost == nil && !isConnected { answer.lost = connectionError() }
        return answer
    }

    /// Reads the answers still owed for deferred statements (``pipeline(_:deferring:)``) and
    /// leaves pipeline mode; every other call on the connection does this first. Throws when
    /// one of them failed, and the connection is then not used again.
    func settle() throws {
        guard !deferred.isEmpty else { return }
        let carried = deferred
        deferred = []
        var answer = PGPipelineAnswer()
        do {
            try readAnswers(carried, until: deadline(), into: &answer)
        } catch let error as ReservoirError {
            answer.lost = error
        }
        if !broken { _ = PQexitPipelineMode(handle) }
        if let error = answer.error {
            broken = true
            throw error
        }
    }

    /// Sends `items` (their prepared statements' names in `names`); returns what was sent: a
    /// statement's SQL, or nil for a sync. A failed send sets `lost`, and what went out before
    /// it is closed with a sync so its answers can still be read. SQL and names go to libpq
    /// through `withCString`, which lends a string's own bytes (a short one copied on the
    /// stack): passed as a plain argument, each was copied into a new array on the heap.
    private func send(_ items: [PGPipelineItem], names: ArraySlice<String?>, lost: inout ReservoirError?) -> [String?] {
        var sent: [String?] = []
        sent.reserveCapacity(items.count)
        for (item, name) in zip(items, names) {
            let ok: Bool
            switch item {
            case let .prepared(sql, parameters, binary):
                ok = PGParameter.withBound(parameters) { values, lengths, formats in
                    (name ?? "").withCString { PQsendQueryPrepared(handle, $0, Int32(parameters.count), values, lengths, formats, binary ? 1 : 0) } == 1
                }
                if ok { sent.append(sql) }
            case .sync:
                ok = PQpipelineSync(handle) == 1
                if ok { sent.append(nil) }
            }
            if !ok {
                lost = connectionError()
                if let last = sent.last, last != nil, PQpipelineSync(handle) == 1 { sent.append(nil) }
                break
            }
        }
        return sent
    }

    /// Reads the answers of `sent` (as ``send(_:names:lost:)`` returned it), in order: each
    /// statement's result or error into `answer`.
    private func readAnswers(_ sent: [String?], until deadline: ContinuousClock.Instant, into answer: inout PGPipelineAnswer) throws {
        for sql in sent {
            guard let sql else {
                if let sync = try nextResult(until: deadline) { PQclear(sync) }
                continue
            }
            var kept: PGResult?
            while let result = try nextResult(until: deadline) {
                switch PQresultStatus(result) {
                case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                    kept = PGResult(result)
                case PGRES_FATAL_ERROR:
                    if PGFailure.isConnectionLoss(result) {
                        if answer.lost == nil { answer.lost = PGFailure.error(result: result, connection: self, sql: sql) }
                    } else if answer.failure == nil {
                        answer.failure = PGFailure.error(result: result, connection: self, sql: sql)
                    }
                    PQclear(result)
                default:
                    // PGRES_PIPELINE_ABORTED: skipped after an error in its segment.
                    PQclear(result)
                }
            }
            answer.results.append(kept)
        }
    }

    func connectionError() -> ReservoirError {
        ReservoirError(.backend, "\(name): \(PGFailure.connectionCause(Self.message(PQerrorMessage(handle))))")
    }
}

extension Array where Element == PGPipelineItem {
    fileprivate var endsWithSync: Bool {
        if case .sync? = last { return true }
        return false
    }
}
