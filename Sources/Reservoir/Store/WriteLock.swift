import Foundation

/// The store's write lock, which also knows which thread is inside a write, so a nested
/// write is reported instead of deadlocking.
final class WriteLock: @unchecked Sendable {
    // @unchecked: `owner` is guarded by `ownerLock`; `lock` is the write lock itself, held
    // for a whole write, so a nested write can read `owner` without waiting on it.
    private let lock = NSLock()
    private let ownerLock = NSLock()
    private var owner: pthread_t?

    func withWriter<R>(_ body: () throws -> R) throws -> R {
        ownerLock.lock()
        let nested = owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        ownerLock.unlock()
        if nested {
            throw ReservoirError(.misuse, "write called inside another write's closure on the same store; do all the work in the outer transaction")
        }
        lock.lock()
        ownerLock.lock()
        owner = pthread_self()
        ownerLock.unlock()
        defer {
            ownerLock.lock()
            owner = nil
            ownerLock.unlock()
            lock.unlock()
        }
        return try body()
    }

    /// `body` under the lock if no write holds it now; nil, without waiting, if one does.
    func withLockIfFree<R>(_ body: () throws -> R) rethrows -> R? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body()
    }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// The calling thread, as a number (to compare with one taken earlier).
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
    #else
    UInt(pthread_self())
    #endif
}
