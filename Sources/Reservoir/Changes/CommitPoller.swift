import Foundation

/// Decides when a store probes its backend for other processes' commits.
///
/// - With a commit signal (``StorageBackend/watchCommits(_:)``): a probe at once on every
///   wake-up, then follow-up probes 1, 2, 4 … 64 ms apart, restarted whenever one finds the
///   token moved. A file signal fires when the bytes are written, which can be a little
///   before the commit is visible (SQLite publishes a WAL commit through its shared memory,
///   LMDB through its lock file's map, neither of which notifies); the follow-ups catch it
///   within about twice that lag, and cost a few microseconds each, only around activity.
///   A timer probes once a second as the safety net for what a signal can miss. A signal
///   that fires only once its commit is visible (``CommitWatch/wakesAfterCommitIsVisible``:
///   PostgreSQL's NOTIFY) gets no follow-ups, unless its probe failed: a follow-up there is a
///   read transaction on the server, not a few microseconds.
/// - The token only decides whether a wake-up's first probe reads the change log. The
///   follow-ups and the timer read it whatever the token says (the newest visible sequence
///   against the last one announced: one cheap read), so a token that moved before its
///   commit was visible, or a catch-up that failed, cannot leave a commit unannounced until
///   the next one. A token counts as seen only once a catch-up after it finished.
/// - The signal fires for this store's own commits too. A wake-up within ``ownCommitQuiet``
///   of one is probed that long after it instead of at once, so a store committing in a
///   tight loop probes about every 2 ms rather than once per commit; and the follow-ups
///   restart only when a probe finds another process's commits, not the store's own.
///   The price: another process's commit that lands while this store is itself
///   committing arrives up to 2 ms later.
/// - Without one: the timer probes every 50 ms.
///
/// Idle, a store with a signal wakes once a second and does one cheap probe and one read of
/// its newest sequence (for PostgreSQL, a round trip).
final class CommitPoller: @unchecked Sendable {
    /// What a catch-up found.
    enum CatchUp: Sendable {
        /// Commits this store had not announced (another process's or store's).
        case found
        /// Nothing beyond what the store announced.
        case nothing
        /// It could not read the log (busy, transient): the next probe reads it again.
        case failed
    }

    // @unchecked: `lastToken`, `generation` and `hooks` are touched only on `queue`; `control` is Locked.

    /// What a probe calls: the backend's token, the catch-up when it moved, the stop when the
    /// store's files are gone.
    struct Hooks: Sendable {
        let token: @Sendable () throws -> UInt64
        /// Catches up; says whether it found commits other than the store's own.
        let moved: @Sendable () -> CatchUp
        let gone: @Sendable (ReservoirError) -> Void
    }

    private struct Control {
        var timer: (any DispatchSourceTimer)?
        var watch: (any CommitWatch)?
        var stopped = false
        var wakeQueued = false
        /// When this store last committed (``noteOwnCommit()``), in uptime nanoseconds; 0 for never.
        var ownCommit: UInt64 = 0
    }

    /// How long after an own commit a wake-up waits before probing, in nanoseconds (see the type's summary).
    static let ownCommitQuiet: UInt64 = 2_000_000

    /// The follow-up probes after a wake-up, in milliseconds.
    static let settleDelays = [1, 2, 4, 8, 16, 32, 64]

    private let queue = DispatchQueue(label: "reservoir.store.poll")
    private let control = Locked(Control())
    private var lastToken: UInt64?
    private var generation: UInt64 = 0
    private var hooks: Hooks?
    /// The signal's thread while it probes (``wake()`` from a signal that wakes on its own thread).
    private let probingThread = Locked<UInt?>(nil)

    /// Whether the caller is the signal's own thread, probing (and delivering what it found).
    var isProbingOnCurrentThread: Bool { probingThread.withLock { $0 } == currentThreadID() }

    /// Starts probing: on `watch`'s wake-ups (see ``wake()``) if there is one, and every `interval`.
    func start(every interval: Duration, watch: (any CommitWatch)?, hooks: Hooks) {
        queue.sync { self.hooks = hooks }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let (seconds, attoseconds) = interval.components
        let nanoseconds = max(1_000_000, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds), leeway: .milliseconds(5))
        timer.setEventHandler { [weak self] in self?.probe(always: true) }
        let started = control.withLock { control -> Bool in
            guard !control.stopped else { return false }
            control.timer = timer
            control.watch = watch
            return true
        }
        guard started else {
            watch?.cancel()
            return
        }
        timer.resume()
        // One probe now rather than at the timer's first tick: what was committed since the
        // store opened is found at once, and a backend whose signal tells what it heard only
        // from now on (PostgreSQL's announcements, heard once it listens) has its one read of
        // the log behind it before the next commit, instead of in that commit's delivery.
        queue.async { [weak self] in _ = self?.probe(always: true) }
    }

    /// Another process may have committed: probe now, then settle (see the type's summary).
    /// Cheap to call often; wake-ups that arrive before the probe runs are folded into it.
    /// From a signal that ``CommitWatch/wakesOnItsOwnThread``, the probe runs on the caller's
    /// thread (after any probe under way) and this returns once it is done.
    func wake() {
        let now = DispatchTime.now().uptimeNanoseconds
        // nil: a wake-up is already queued (or the poller stopped); 0: probe at once; else the
        // uptime to probe at. (Plain integers: `DispatchTime(uptimeNanoseconds: 0)` means "now".)
        let decided = control.withLock { control -> (deadline: UInt64, inline: Bool)? in
            guard !control.stopped, !control.wakeQueued else { return nil }
            control.wakeQueued = true
            let quietUntil = control.ownCommit + Self.ownCommitQuiet
            return (control.ownCommit > 0 && quietUntil > now ? quietUntil : 0, control.watch?.wakesOnItsOwnThread ?? false)
        }
        guard let (deadline, inline) = decided else { return }
        let work: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            control.withLock { $0.wakeQueued = false }
            generation &+= 1
            settle(step: -1, generation: generation)
        }
        if deadline == 0, inline {
            // The signal's own thread (``CommitWatch/wakesOnItsOwnThread``) waits for the probe.
            queue.sync {
                probingThread.withLock { $0 = currentThreadID() }
                defer { probingThread.withLock { $0 = nil } }
                work()
            }
        } else if deadline == 0 {
            queue.async(execute: work)
        } else {
            queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: deadline), execute: work)
        }
    }

    /// Returns once every probe queued before the call has run (the one `start` queues
    /// included): for a caller that must know which thread a later wake-up's delivery runs on.
    func waitForQueuedProbes() {
        queue.sync {}
    }

    /// This store just committed: its own signal is about to fire (see the type's summary).
    func noteOwnCommit() {
        let now = DispatchTime.now().uptimeNanoseconds
        control.withLock { $0.ownCommit = now }
    }

    /// Stops the timer and the signal. Safe from any thread, the probe's own included.
    func stop() {
        let (timer, watch) = control.withLock { control in
            control.stopped = true
            defer {
                control.timer = nil
                control.watch = nil
            }
            return (control.timer, control.watch)
        }
        timer?.cancel()
        watch?.cancel()
    }

    // MARK: - On `queue`

    /// Probes, then schedules the next follow-up unless a newer wake-up took over. After a
    /// signal that fires only once its commit is visible, only a failed probe has follow-ups.
    private func settle(step: Int, generation: UInt64) {
        guard generation == self.generation else { return }
        let outcome = probe(always: step >= 0)
        if outcome != .failed, control.withLock({ $0.watch?.wakesAfterCommitIsVisible ?? false }) { return }
        let next = outcome == .found ? 0 : step + 1
        guard next < Self.settleDelays.count else { return }
        queue.asyncAfter(deadline: .now() + .milliseconds(Self.settleDelays[next])) { [weak self] in
            self?.settle(step: next, generation: generation)
        }
    }

    /// One probe; returns what its catch-up found (``CatchUp/found``: another process's
    /// commits). It catches up when the token moved, or `always`. A token is taken as seen only
    /// once a catch-up after it finished.
    @discardableResult
    private func probe(always: Bool) -> CatchUp {
        guard let hooks, !control.withLock({ $0.stopped }) else { return .nothing }
        let token: UInt64
        do {
            token = try hooks.token()
        } catch let error as ReservoirError where error.code == .gone {
            hooks.gone(error)
            return .nothing
        } catch {
            return .failed  // busy or transient: the next probe tries again
        }
        guard always || token != lastToken else { return .nothing }
        let outcome = hooks.moved()
        lastToken = outcome == .failed ? nil : token
        return outcome
    }
}
