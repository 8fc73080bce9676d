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
}

extension CommitWatch {
    public var wakesAfterCommitIsVisible: Bool { false }
}
