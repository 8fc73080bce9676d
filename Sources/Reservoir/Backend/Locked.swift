import Foundation
#if !canImport(Darwin)
import Synchronization
#endif

/// A value guarded by a lock: public SPI for backends (the built-in ones and third-party
/// ones alike), which are called from any thread. Never call out to unknown code inside
/// `withLock`: nesting deadlocks.
///
/// The lock is `os_unfair_lock` on Apple platforms, held in memory the object owns, and the
/// standard library's `Mutex` elsewhere: both take a free lock with one atomic operation,
/// inline. (`NSLock` reaches a `pthread_mutex_t` through a class call, which on Linux doubled
/// the cost of the lock a point read takes; a `pthread_mutex_t` called directly still cost
/// about 80 instructions a lock and unlock, `Mutex` about 25. `Mutex` needs macOS 15, hence
/// the unfair lock there.)
public final class Locked<State>: @unchecked Sendable {
    // Inlinable into the backends' modules, as are the lock's calls: a closed check through
    // `withLock` called across modules cost a point read about 100 instructions.
    #if canImport(Darwin)
    @usableFromInline let lock = PlatformLock()
    #else
    @usableFromInline let mutex = Mutex<Void>(())
    #endif
    // Unchecked, see ChangeHub: only `withLock` touches it, under the lock (nesting deadlocks first).
    @exclusivity(unchecked) @usableFromInline var state: State

    /// A lock guarding `state`.
    public init(_ state: State) { self.state = state }

    #if canImport(Darwin)
    deinit { lock.deallocate() }
    #endif

    /// Runs `body` with the state, under the lock.
    @inlinable
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        #if canImport(Darwin)
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
        #else
        return try mutex.withLock { _ in try body(&state) }
        #endif
    }
}

#if canImport(Darwin)
/// A mutex in memory of its own (a lock must not move, so it cannot be a stored property
/// of a Swift value).
@usableFromInline
struct PlatformLock {
    @usableFromInline let pointer: UnsafeMutablePointer<os_unfair_lock>
    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: os_unfair_lock())
    }
    @inlinable func lock() { os_unfair_lock_lock(pointer) }
    /// Takes the lock if it is free; returns whether it did.
    func tryLock() -> Bool { os_unfair_lock_trylock(pointer) }
    @inlinable func unlock() { os_unfair_lock_unlock(pointer) }
    func deallocate() { pointer.deinitialize(count: 1); pointer.deallocate() }
}
#endif

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
