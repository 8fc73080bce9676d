import Foundation

/// A value guarded by a lock, shared with the backend modules (`package` access, not public
/// API). Never call out to unknown code inside `withLock`.
package final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    // Unchecked, see ChangeHub: only `withLock` touches it, under the lock (nesting deadlocks first).
    @exclusivity(unchecked) private var state: State

    package init(_ state: State) { self.state = state }

    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
