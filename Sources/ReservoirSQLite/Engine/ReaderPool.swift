import Foundation
import Reservoir

/// Reader connections, opened on demand and kept for reuse.
///
/// A read takes an idle connection or opens a new one, so reads never wait for each
/// other or for the writer (WAL readers see the last commit that ended before their
/// transaction began). At most `maxIdle` connections are kept when returned.
final class ReaderPool: @unchecked Sendable {
    // @unchecked: a session is used by one thread at a time between acquire and release.
    /// The idle sessions, and whether the pool was closed. A `Locked`: every read takes and
    /// returns a session, and its lock costs about half an `NSLock`'s on Linux.
    private let state = Locked(State())
    private struct State {
        var idle: [Session] = []
        var isClosed = false
    }
    private let path: String
    private let busyTimeout: Int32
    private let maxIdle: Int

    /// Connections open the file for reading only (a read-only store).
    private let readOnly: Bool
    private let immutable: Bool

    init(path: String, busyTimeout: Int32, maxIdle: Int, readOnly: Bool = false, immutable: Bool = false) {
        self.readOnly = readOnly
        self.immutable = immutable
        self.path = path
        self.busyTimeout = busyTimeout
        self.maxIdle = max(1, maxIdle)
    }

    func acquire() throws -> Session {
        let (isClosed, session) = state.withLock { state in
            state.isClosed ? (true, nil) : (false, state.idle.popLast())
        }
        if isClosed { throw ReservoirError.closed(store: "sqlite:" + path) }
        if let session { return session }
        let connection = try Connection(path: path, create: false, busyTimeout: busyTimeout, readOnly: readOnly, immutable: immutable)
        try connection.execute("PRAGMA query_only = 1")
        return Session(connection: connection)
    }

    /// Returns a session; one that is broken, surplus, or returned after close is closed.
    func release(_ session: Session, healthy: Bool) {
        // A session not kept is closed by its release, after the lock is left.
        state.withLock { state in
            guard healthy, !state.isClosed, state.idle.count < maxIdle else { return }
            state.idle.append(session)
        }
    }

    func close() {
        let sessions = state.withLock { state in
            state.isClosed = true
            defer { state.idle = [] }
            return state.idle
        }
        _ = sessions  // released here, outside the lock
    }
}
