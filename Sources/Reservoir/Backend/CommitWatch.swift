/// What ``StorageBackend/watchCommits(_:)`` returns: the running signal, stopped by ``cancel()``.
public protocol CommitWatch: AnyObject, Sendable {
    /// Stops calling the wake closure; after it returns, no new call starts.
    func cancel()
}
