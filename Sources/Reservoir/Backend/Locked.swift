import Foundation

/// A value guarded by a lock: public SPI for backends (the built-in ones and third-party
/// ones alike), which are called from any thread. Never call out to unknown code inside
/// `withLock`: nesting deadlocks.
public final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    // Unchecked, see ChangeHub: only `withLock` touches it, under the lock (nesting deadlocks first).
    @exclusivity(unchecked) private var state: State

    /// A lock guarding `state`.
    public init(_ state: State) { self.state = state }

    /// Runs `body` with the state, under the lock.
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

extension Locked where State == Bool {
    /// Sets the flag; returns whether this call set it (false when it was set already).
    /// For a backend's `close()`, which must release its resources once however often it
    /// is called, from any thread.
    public func setOnce() -> Bool {
        withLock { flag in
            defer { flag = true }
            return !flag
        }
    }
}
