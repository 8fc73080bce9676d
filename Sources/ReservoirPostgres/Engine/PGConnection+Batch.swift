import CLibPQ
import Foundation
import Reservoir

/// Writes sent without waiting for each one's answer: a write transaction's puts, deletes and
/// change-log rows are queued and go out together in libpq's pipeline mode (one round trip
/// for the lot, the `COMMIT` included), and rows known to be new stream into a binary `COPY`.
/// Any statement that reads (``PGConnection/execute(_:)``, ``PGConnection/run(_:_:binaryResults:)``)
/// sends what is pending first, so a transaction always reads its own writes; an error in
/// a queued write is thrown by the statement that sent it.
extension PGConnection {
    /// Queued statements sent in one pipeline at most: results are read only after the
    /// sync, so a bounded batch keeps both sides' socket buffers from filling up.
    static let pipelineLimit = 256

    var hasPending: Bool { !queued.isEmpty || copyCommand != nil }

    /// Queues a statement whose result is not needed (an upsert, a delete, a log row).
    func enqueue(_ sql: String, _ parameters: [PGParameter]) throws {
        if copyCommand != nil { try finishCopy() }
        queued.append((sql, parameters))
        if queued.count >= Self.pipelineLimit { try flush() }
    }

    /// The binary `COPY` format's signature, which starts its header.
    private static let copySignature: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00]

    /// Streams one row into `command` (`COPY t (…) FROM STDIN (FORMAT binary)`), opening it
    /// (or replacing one open for other columns) first. `fields` follow the command's columns.
    func copyRow(_ command: String, _ fields: [PGParameter]) throws {
        _ = try copyRow(command, fieldCount: fields.count) { buffer in
            for field in fields { field.appendField(to: buffer) }
            return true
        }
    }

    /// Streams one row into `command` as ``copyRow(_:_:)`` does, its `fieldCount` fields
    /// written straight into the buffer by `append`, which returns false to take the row
    /// back (nothing of it is sent). Returns what `append` returned.
    func copyRow(_ command: String, fieldCount: Int, _ append: (CopyBuffer) -> Bool) throws -> Bool {
        if copyCommand != command {
            try flush()
            _ = try checkCopyStart(exec { PQsendQuery(handle, command) }, command)
            copyCommand = command
            copyBuffer.removeAll()
            Self.copySignature.withUnsafeBytes { copyBuffer.append($0) }
            copyBuffer.appendBigEndian(Int32(0))  // flags
            copyBuffer.appendBigEndian(Int32(0))  // header extension length
        }
        let start = copyBuffer.count
        copyBuffer.appendBigEndian(Int16(truncatingIfNeeded: fieldCount))
        guard append(copyBuffer) else {
            copyBuffer.truncate(to: start)
            return false
        }
        if copyBuffer.count >= 1 << 16 { try sendCopyBuffer(command) }
        return true
    }

    /// Sends everything pending: ends an open `COPY`, then runs the queued statements in one
    /// pipeline, followed by `final` (say `COMMIT`) when given. Throws the first error; when
    /// the connection is lost or times out after `final` was sent and before the server
    /// answered it (no earlier statement having failed), throws `.commitOutcomeUnknown`: the
    /// server may have run it.
    func flush(then final: String? = nil) throws {
        if copyCommand != nil { try finishCopy() }
        guard !queued.isEmpty || final != nil else { return }
        try settle()
        try checkUsable()
        let batch = queued
        queued.removeAll(keepingCapacity: true)
        // Named statements are prepared before the pipeline (PQprepare waits for its answer).
        let names = try batch.map { try statementName(for: $0.sql) }
        let deadline = deadline()
        guard PQenterPipelineMode(handle) == 1 else { throw connectionError() }
        var sent = 0
        var failure: ReservoirError?
        var finalSent = false
        var finalAnswered = false
        var serverRefused = false
        for (statement, name) in zip(batch, names) {
            let ok = PGParameter.withBound(statement.parameters) { values, lengths, formats in
                name.withCString { PQsendQueryPrepared(handle, $0, Int32(statement.parameters.count), values, lengths, formats, 1) == 1 }
            }
            guard ok else { failure = connectionError(); break }
            sent += 1
        }
        if failure == nil, let final {
            if final.withCString({ PQsendQueryParams(handle, $0, 0, nil, nil, nil, nil, 0) }) == 1 { sent += 1; finalSent = true } else { failure = connectionError() }
        }
        var synced = PQpipelineSync(handle) == 1
        do {
            if synced { try flushOutput(until: deadline) }
            for index in 0..<sent {
                while let result = try nextResult(until: deadline) {
                    let status = PQresultStatus(result)
                    if index == batch.count, status != PGRES_FATAL_ERROR || !PGFailure.isConnectionLoss(result) { finalAnswered = true }
                    if status == PGRES_FATAL_ERROR, failure == nil {
                        if !PGFailure.isConnectionLoss(result) { serverRefused = true }
                        failure = PGFailure.error(result: result, connection: self, sql: index < batch.count ? batch[index].sql : final ?? "")
                    }
                    PQclear(result)
                }
            }
            if synced, let sync = try nextResult(until: deadline) { PQclear(sync) }
        } catch let error as ReservoirError {
            if failure == nil { failure = error }
            synced = false
        }
        if !broken { _ = PQexitPipelineMode(handle) }
        if finalSent, !finalAnswered, !serverRefused, let lost = failure ?? (synced ? nil : connectionError()) {
            throw ReservoirError(.commitOutcomeUnknown, "\(name): the connection was lost before the server answered \(final ?? "")",
                                 nativeCode: lost.nativeCode, nativeMessage: lost.message)
        }
        if let failure { throw failure }
        if !synced { throw connectionError() }
    }

    /// Drops what is pending (the transaction is being rolled back): an open `COPY` is
    /// cancelled, queued statements are never sent.
    func discardPending() {
        queued.removeAll()
        guard copyCommand != nil else { return }
        copyCommand = nil
        copyBuffer.removeAll()
        guard !broken else { return }
        let deadline = deadline()
        do {
            try putCopy(until: deadline) { PQputCopyEnd(handle, "rolled back") }
            while let result = try nextResult(until: deadline) { PQclear(result) }
        } catch {
            // Timed out: the connection is broken and will not be used again.
        }
    }

    private func finishCopy() throws {
        guard let command = copyCommand else { return }
        copyCommand = nil
        copyBuffer.appendBigEndian(Int16(-1))  // the end of the rows
        var failure: ReservoirError?
        do {
            try sendCopyBuffer(command)
        } catch let error as ReservoirError {
            failure = error
        }
        let deadline = deadline()
        do {
            try putCopy(until: deadline) { PQputCopyEnd(handle, nil) }
            while let result = try nextResult(until: deadline) {
                if PQresultStatus(result) != PGRES_COMMAND_OK, failure == nil {
                    failure = PGFailure.error(result: result, connection: self, sql: command)
                }
                PQclear(result)
            }
        } catch let error as ReservoirError {
            if failure == nil { failure = error }
        }
        if let failure { throw failure }
    }

    private func sendCopyBuffer(_ command: String) throws {
        defer { copyBuffer.removeAll() }
        let deadline = deadline()
        try putCopy(until: deadline) {
            copyBuffer.withBytes { bytes in
                bytes.baseAddress.map { PQputCopyData(handle, $0.assumingMemoryBound(to: CChar.self), Int32(bytes.count)) } ?? 1
            }
        }
    }

    /// Runs `put` (`PQputCopyData`, `PQputCopyEnd`) until libpq takes the data (nonblocking, it
    /// returns 0 while its buffer is full), then sends it, waiting no longer than `deadline`.
    private func putCopy(until deadline: ContinuousClock.Instant, _ put: () -> Int32) throws {
        try checkUsable()
        while true {
            let taken = put()
            if taken < 0 { throw connectionError() }
            if taken == 1 { break }
            try waitForSocket(writing: true, until: deadline)
            if PQflush(handle) < 0 { throw connectionError() }
        }
        try flushOutput(until: deadline)
    }

    private func checkCopyStart(_ result: OpaquePointer?, _ sql: String) throws -> Bool {
        guard let result else { throw connectionError() }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COPY_IN else {
            throw PGFailure.error(result: result, connection: self, sql: sql)
        }
        return true
    }
}
