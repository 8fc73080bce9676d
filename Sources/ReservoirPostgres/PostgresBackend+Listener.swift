import Foundation
import Reservoir

/// Other clients' commits: the listening connection, its NOTIFY wake-up thread and the
/// commit token (Backends.md § PostgreSQL, several clients). State under `listenerLock`.
extension PostgresBackend {
    /// Counts NOTIFYs from other clients' commits on a listening connection (reading what
    /// arrived costs no round trip), and now and then (every second, or every ten while the
    /// socket is watched) reads the newest sequence as a safety net for a notification lost
    /// with a connection. A broken listener is replaced,
    /// and the token moves, so the store catches up from the log after an outage.
    public func commitToken() throws -> UInt64 {
        listenerLock.lock()
        defer { listenerLock.unlock() }
        try checkOpen()
        if listener == nil || !(listener?.consumeInput() ?? false) {
            try connectListener()
        }
        guard let listener else { return token }
        _ = takeOthersNotifications()
        do {
            try listenForAnnouncements(on: listener)
        } catch let error as ReservoirError {
            throw gone(error) ?? error
        }
        // With the socket watched, NOTIFY wakes the store and a broken listener is noticed at
        // once; the read then only guards against a connection that died silently.
        let now = ContinuousClock.now
        let interval: Duration = wake == nil ? .seconds(1) : .seconds(10)
        if lastSequenceCheck.map({ now - $0 >= interval }) ?? true {
            lastSequenceCheck = now
            do {
                // Until a write creates the store, there is no meta row: sequence 0.
                let exists = try created.withLock { $0 }
                    || listener.execute("SELECT to_regclass(\(Layout.literal(layout.meta))) IS NOT NULL").text(0, 0) == "t"
                let sequence = exists ? try listener.execute("SELECT sequence FROM \(layout.meta)").text(0, 0).flatMap { Int64($0) } ?? 0 : 0
                // A sequence just announced was heard already, and everything before it.
                if sequence != probedSequence {
                    probedSequence = sequence
                    if !recentlyAnnounced.contains(UInt64(clamping: sequence)) {
                        token &+= 1
                        heardIsComplete = false
                    }
                }
            } catch let error as ReservoirError {
                throw gone(error) ?? error
            }
        }
        return token
    }

    /// Takes the notifications the listener has received; moves the token and returns true
    /// when one came from another client. Keeps the commits announced with their change sets
    /// for ``takeHeardCommits()``; a plain signal is skipped when its commit was just announced,
    /// and any other (plain SQL, an announcement too large to send, an older writer) marks what
    /// was heard incomplete. Call under `listenerLock`.
    func takeOthersNotifications() -> Bool {
        guard let listener else { return false }
        let own = writerPID.withLock { $0 }
        var moved = false
        for notification in listener.takeNotifications() where notification.sender != own {
            if notification.channel == layout.channel {
                if let sequence = UInt64(notification.payload), recentlyAnnounced.contains(sequence) { continue }
                heardIsComplete = false
            } else {
                do {
                    // Nil: a copy of this store in another schema, sharing its identity.
                    guard let announcement = try layout.announcement(in: notification.payload) else { continue }
                    heard.append(announcement)
                    recentlyAnnounced.append(announcement.changeSet.sequence)
                    if recentlyAnnounced.count > 64 { recentlyAnnounced.removeFirst(recentlyAnnounced.count - 64) }
                } catch {
                    heardIsComplete = false
                }
            }
            moved = true
        }
        // A store that stopped taking them reads the log instead of holding them all.
        if heard.count > Self.heardLimit {
            heard.removeAll()
            heardIsComplete = false
        }
        if moved { token &+= 1 }
        return moved
    }

    /// Announced commits kept for the store at most.
    static var heardLimit: Int { 1024 }

    /// What the listener heard since the last call (see ``StorageBackend/takeHeardCommits()``).
    public func takeHeardCommits() -> HeardCommits {
        listenerLock.lock()
        defer { listenerLock.unlock() }
        defer {
            heard = []
            heardIsComplete = true
        }
        return HeardCommits(announcements: heard, isComplete: heardIsComplete)
    }

    /// Listens on the channel commits are announced on, once the store's identity is known
    /// (and again should it change: the store dropped and made anew). Call under `listenerLock`.
    func listenForAnnouncements(on connection: PGConnection) throws {
        // Every probe passes here: the identity is compared, the channel's name made only anew.
        guard let identity = knownIdentity.withLock({ $0 }), identity != announcedIdentity else { return }
        let previous = announcedIdentity.map { "UNLISTEN \(Layout.quote(Layout.announcementChannel($0))); " } ?? ""
        try connection.execute(previous + "LISTEN \(Layout.quote(Layout.announcementChannel(identity)))")
        announcedIdentity = identity
        // Commits before the LISTEN were heard only by their plain signal.
        heardIsComplete = false
    }

    /// NOTIFY arrives on the listener's socket as soon as another client commits: the store
    /// is woken then, and its probe reads the notifications (``commitToken()``).
    public func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)? {
        listenerLock.lock()
        defer { listenerLock.unlock() }
        self.wake = wake
        // Listen now: until a listener exists, no notification can arrive to wake anybody.
        // Should connecting fail, the store's timer probe tries again (and watches then).
        if let listener {
            watchSocket(of: listener)
        } else {
            try? connectListener()
        }
        return NotifyWatch(backend: self)
    }

    /// Replaces the listening connection (also its socket watch). Call under `listenerLock`.
    func connectListener() throws {
        stopWatchingSocket()
        listener = nil
        let connection = try connect()
        try connection.execute("LISTEN \(Layout.quote(layout.channel))")
        listener = connection
        token &+= 1
        lastSequenceCheck = nil
        // Whatever the old connection heard or missed, the store reads the log now.
        heard = []
        heardIsComplete = false
        recentlyAnnounced = []
        announcedIdentity = nil
        if wake != nil { watchSocket(of: connection) }
        // Failing here leaves the plain signal; the next probe tries again.
        try? listenForAnnouncements(on: connection)
    }

    /// Wakes the store whenever `connection`'s socket has input. Call under `listenerLock`.
    func watchSocket(of connection: PGConnection) {
        stopWatchingSocket()
        guard wake != nil else { return }
        listenerThread = PGNotifyThread(watching: connection) { [weak self] connection in
            guard let self else { return false }
            self.listenerLock.lock()
            // Reading the input here keeps the socket from firing again. A broken connection
            // (the server went away) stops the watch; the probe this wakes replaces the
            // listener and watches the new one. This store's own commits (every one of them
            // comes back here) wake nobody: only another client's move the token.
            // A replaced listener's thread just ends (its replacement has a thread of its own).
            guard self.listener === connection else {
                self.listenerLock.unlock()
                return false
            }
            let alive = connection.consumeInput()
            if !alive { self.stopWatchingSocket() }
            let others = alive && self.takeOthersNotifications()
            let wake = self.wake
            self.listenerLock.unlock()
            if !alive || others { wake?() }
            return alive
        }
    }

    /// Call under `listenerLock`.
    func stopWatchingSocket() {
        listenerThread?.stop()
        listenerThread = nil
    }

    func stopWatching() {
        listenerLock.lock()
        defer { listenerLock.unlock() }
        wake = nil
        stopWatchingSocket()
    }
}

/// The running NOTIFY wake-up of a ``PostgresBackend``.
final class NotifyWatch: CommitWatch {
    private weak let backend: PostgresBackend?

    init(backend: PostgresBackend) { self.backend = backend }

    func cancel() { backend?.stopWatching() }

    /// The server delivers a NOTIFY only after the notifying transaction committed and is
    /// visible to new snapshots.
    var wakesAfterCommitIsVisible: Bool { true }

    /// The wake-up is called on the listener's own thread (``PGNotifyThread``), one per
    /// store, with no lock held.
    var wakesOnItsOwnThread: Bool { true }
}
