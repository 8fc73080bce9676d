import Foundation
import Reservoir
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread of its own that waits in `poll` for input on a listening connection's socket and
/// calls `handler` with the connection each time some arrives, until ``stop()`` or until `handler` returns false.
///
/// Why not a dispatch read source: every one of the store's own commits comes back to its
/// listener as a NOTIFY, so the socket fires once per commit. A dispatch source spends two
/// thread wake-ups on each (its manager thread's `epoll_wait`, then a worker for the handler)
/// and re-arms the descriptor with `epoll_ctl` every time; this thread is woken once, by `poll`.
///
/// The thread holds the connection until it exits, so the descriptor it polls is never closed
/// (and its number reused) under it.
final class PGNotifyThread: @unchecked Sendable {
    // @unchecked: `connection` is only handed to the handler, which uses it under the
    // backend's listener lock; the stop pipe's descriptors are set once, in init.

    private let connection: PGConnection
    private let socket: Int32
    /// Written to by ``stop()``: its read end is polled beside the socket.
    private let stopRead: Int32
    private let stopWrite: Int32
    private let stopped = Locked(false)

    /// Starts watching `connection`'s socket. Returns nil when no pipe or thread can be made
    /// (the store's timer probe still finds other clients' commits, only later).
    init?(watching connection: PGConnection, handler: @escaping @Sendable (PGConnection) -> Bool) {
        var fds: [Int32] = [-1, -1]
        guard connection.socket >= 0, pipe(&fds) == 0 else { return nil }
        self.connection = connection
        self.socket = connection.socket
        self.stopRead = fds[0]
        self.stopWrite = fds[1]
        let thread = Thread { [self] in self.run(handler) }
        thread.name = "reservoir.postgres.notify"
        thread.stackSize = 256 << 10
        thread.start()
    }

    deinit {
        close(stopRead)
        close(stopWrite)
    }

    /// Ends the thread (it exits at its next wake-up, which this causes). Safe to call with
    /// the handler's lock held: it does not wait for the thread.
    func stop() {
        guard stopped.setOnce() else { return }
        var byte: UInt8 = 0
        _ = write(stopWrite, &byte, 1)
    }

    private func run(_ handler: @Sendable (PGConnection) -> Bool) {
        var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
        while !stopped.withLock({ $0 }) {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 || stopped.withLock({ $0 }) { return }
            // Input, or the connection hung up or failed: either way the handler reads it and
            // says whether the connection is still worth watching.
            if fds[0].revents != 0, !handler(connection) { return }
        }
    }
}
