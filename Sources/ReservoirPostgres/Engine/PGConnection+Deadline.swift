import CLibPQ
import Foundation
import Reservoir
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every wait for the server is bounded: the connection is nonblocking, and each call sends,
/// then waits in `poll` for the socket with a deadline of ``PGConnection/timeout`` seconds.
/// libpq's blocking calls (`PQexec`, `PQgetResult` on a busy connection) would wait forever
/// for a server process that is frozen (stopped, swapped out, behind a dead link the kernel
/// still acknowledges). A call that passes its deadline marks the connection broken (its
/// protocol state is unknown) and throws `.timeout`.
extension PGConnection {
    /// The deadline of a call starting now.
    func deadline() -> ContinuousClock.Instant { .now + .seconds(timeout) }

    /// Sends with `send` (a `PQsend…` call), then collects the results as `PQexec` does: the
    /// last one, or the first error. Nil when sending failed (``check(_:_:)`` reports it).
    func exec(_ send: () -> Int32) throws -> OpaquePointer? {
        try settle()
        try checkUsable()
        let deadline = deadline()
        guard send() == 1 else { return nil }
        try flushOutput(until: deadline)
        var kept: OpaquePointer?
        do {
            while let result = try nextResult(until: deadline) {
                let status = PQresultStatus(result)
                if let previous = kept, PQresultStatus(previous) == PGRES_FATAL_ERROR {
                    PQclear(result)
                } else {
                    if let previous = kept { PQclear(previous) }
                    kept = result
                }
                if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH { break }
            }
        } catch {
            if let kept { PQclear(kept) }
            throw error
        }
        return kept
    }

    /// Throws when the connection timed out before: it is never used again.
    func checkUsable() throws {
        if broken {
            throw ReservoirError(.backend, "\(name): \(PGFailure.connectionCause("an earlier call timed out and the connection was dropped"))")
        }
    }

    /// The next result, waiting for input no longer than `deadline`; nil when the command's
    /// results are all read.
    func nextResult(until deadline: ContinuousClock.Instant) throws -> OpaquePointer? {
        while PQisBusy(handle) == 1 {
            try waitForSocket(writing: false, until: deadline)
            // A broken connection: PQgetResult reports it as an error result.
            if PQconsumeInput(handle) == 0 { break }
        }
        return PQgetResult(handle)
    }

    /// Sends what libpq has buffered, waiting for the socket no longer than `deadline`.
    func flushOutput(until deadline: ContinuousClock.Instant) throws {
        while true {
            let pending = PQflush(handle)
            if pending == 0 { return }
            if pending < 0 { throw ReservoirError(.backend, "\(name): \(PGFailure.connectionCause(Self.message(PQerrorMessage(handle))))") }
            try waitForSocket(writing: true, until: deadline)
            // The server may be sending while we send (a notice, an error): read it, or both
            // sides' buffers fill and neither moves.
            _ = PQconsumeInput(handle)
        }
    }

    /// Waits until the socket is readable (or writable, when `writing`); throws `.timeout`
    /// and marks the connection broken when `deadline` passes first.
    func waitForSocket(writing: Bool, until deadline: ContinuousClock.Instant) throws {
        if Self.waitForSocket(PQsocket(handle), writing: writing, until: deadline) == 0 {
            throw timedOut()
        }
    }

    /// The error for a call that passed its deadline; marks the connection broken.
    func timedOut() -> ReservoirError {
        broken = true
        return ReservoirError(.timeout, "\(name): the server did not answer within \(timeout) s (timeout=\(timeout)); the connection is dropped and the call fails (is the server overloaded, stopped or unreachable?)")
    }

    /// `poll` on `socket` until it is ready or `deadline` (nil: none) passes: 1 when ready
    /// (or failed: the caller's next libpq call reports it), 0 when the deadline passed.
    static func waitForSocket(_ socket: Int32, writing: Bool, until deadline: ContinuousClock.Instant?) -> Int32 {
        guard socket >= 0 else { return 1 }
        var descriptor = pollfd(fd: socket, events: Int16(writing ? POLLOUT | POLLIN : POLLIN), revents: 0)
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let remaining = deadline - .now
                if remaining <= .zero { return 0 }
                let (seconds, attoseconds) = remaining.components
                milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            }
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return 1 }
            if ready < 0 && errno != EINTR { return 1 }
        }
    }
}
