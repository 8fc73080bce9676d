import Foundation

/// A value guarded by a lock, shared with the backend modules (`package` access, not public
/// API). Never call out to unknown code inside `withLock`.
///
/// `state` opts out of dynamic exclusivity checks: the runtime's check only catches
/// overlapping accesses on one thread, and here the only access is `withLock`'s, under the
/// lock (a nested `withLock` on one thread deadlocks on the lock before it could overlap).
/// The check cost about 80 instructions a call, and a commit makes several.
package final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    @exclusivity(unchecked) private var state: State

    package init(_ state: State) { self.state = state }

    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
