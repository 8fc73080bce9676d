import Foundation
import Reservoir

/// Reader connections, opened on demand and kept for reuse.
///
/// A read takes an idle connection or opens a new one, so reads never wait for each
/// other or for the writer (WAL readers see the last commit that ended before their
/// transaction began). At most `maxIdle` connections are kept when returned.
final class ReaderPool: @unchecked Sendable {
    // @unchecked: `idle` and `isClosed` are guarded by `lock`; a session is used by
    // one thread at a time between acquire and release.
    private let lock = NSLock()
    @exclusivity(unchecked) private var idle: [Session] = []
    @exclusivity(unchecked) private var isClosed = false
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
        lock.lock()
        if isClosed {
            lock.unlock()
            throw ReservoirError.closed(store: "sqlite:" + path)
        }
        if let session = idle.popLast() {
            lock.unlock()
            return session
        }
        lock.unlock()
        let connection = try Connection(path: path, create: false, busyTimeout: busyTimeout, readOnly: readOnly, immutable: immutable)
        try connection.execute("PRAGMA query_only = 1")
        return Session(connection: connection)
    }

    /// Returns a session; one that is broken, surplus, or returned after close is closed.
    func release(_ session: Session, healthy: Bool) {
        lock.lock()
        defer { lock.unlock() }
        guard healthy, !isClosed, idle.count < maxIdle else { return }
        idle.append(session)
    }

    func close() {
        lock.lock()
        isClosed = true
        let sessions = idle
        idle = []
        lock.unlock()
        _ = sessions  // released here, outside the lock
    }
}
