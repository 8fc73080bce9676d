import Foundation

/// A value guarded by a lock: public SPI for backends (the built-in ones and third-party
/// ones alike), which are called from any thread. Never call out to unknown code inside
/// `withLock`: nesting deadlocks.
///
/// The lock is the platform's own (`os_unfair_lock` on Apple platforms, a `pthread_mutex_t`
/// elsewhere), held in memory the object owns: `NSLock` reaches the same mutex through a class
/// call, which on Linux doubled the cost of the lock a point read takes. Not the standard
/// library's `Mutex`, which took a free lock in a third of a `pthread_mutex_t`'s instructions:
/// ThreadSanitizer did not see it order two threads' turns and reported a race on the state
/// (its contended path runs in the standard library, which is not instrumented), and every app
/// checking its own code with ThreadSanitizer would be told of such races here.
public final class Locked<State>: @unchecked Sendable {
    // Inlinable into the backends' modules, as are the lock's calls: a closed check through
    // `withLock` called across modules cost a point read about 100 instructions.
    @usableFromInline let lock = PlatformLock()
    // Unchecked, see ChangeHub: only `withLock` touches it, under the lock (nesting deadlocks first).
    @exclusivity(unchecked) @usableFromInline var state: State

    /// A lock guarding `state`.
    public init(_ state: State) { self.state = state }

    deinit { lock.deallocate() }

    /// Runs `body` with the state, under the lock.
    @inlinable
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

/// A mutex in memory of its own (a lock must not move, so it cannot be a stored property
/// of a Swift value).
@usableFromInline
struct PlatformLock {
    #if canImport(Darwin)
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
    #else
    @usableFromInline let pointer: UnsafeMutablePointer<pthread_mutex_t>
    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: pthread_mutex_t())
        pthread_mutex_init(pointer, nil)
    }
    @inlinable func lock() { pthread_mutex_lock(pointer) }
    /// Takes the lock if it is free; returns whether it did.
    func tryLock() -> Bool { pthread_mutex_trylock(pointer) == 0 }
    @inlinable func unlock() { pthread_mutex_unlock(pointer) }
    func deallocate() { pthread_mutex_destroy(pointer); pointer.deinitialize(count: 1); pointer.deallocate() }
    #endif
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
