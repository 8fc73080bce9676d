/// What ``StorageBackend/watchCommits(_:)`` returns: the running signal, stopped by ``cancel()``.
public protocol CommitWatch: AnyObject, Sendable {
    /// Stops calling the wake closure; after it returns, no new call starts.
    func cancel()

    /// Whether every wake-up comes after the commit it announces is visible to a new read
    /// transaction (PostgreSQL's NOTIFY, delivered only once the notifying commit is visible).
    /// The store then probes once per wake-up. False (the default) for a signal that can fire
    /// before the commit is visible (a file's bytes written before the engine publishes the
    /// commit): the store also probes a few times over the next 127 ms after each wake-up.
    var wakesAfterCommitIsVisible: Bool { get }

    /// Whether the wake closure is only ever called on a thread the watch keeps for this one
    /// store, which the store may keep busy (PostgreSQL's listener thread). The store then
    /// probes, catches up and delivers on that thread, instead of handing every wake-up to a
    /// thread of its own: a thread hop less per commit. False (the default) for a signal
    /// whose thread serves others too (a shared file watcher), which must not wait for one
    /// store's catch-up.
    var wakesOnItsOwnThread: Bool { get }
}

extension CommitWatch {
    public var wakesAfterCommitIsVisible: Bool { false }
    public var wakesOnItsOwnThread: Bool { false }
}
