import Foundation
#if !canImport(Darwin)
import Synchronization
#endif

/// A flag that is set once and read often, from any thread: public SPI for a backend's
/// closed flag, which every call reads and only `close()` sets.
///
/// Reading it is one atomic load (acquiring: whatever the setter did before setting it is
/// seen by a reader that sees it set). Through ``Locked`` it was a lock and an unlock, about
/// 80 instructions on Linux, and a point read passes two closed checks, the store's and its
/// backend's. On Apple platforms, where the standard library's atomics need macOS 15, it is an
/// `os_unfair_lock`'s turn, which costs about as little there. (ThreadSanitizer sees the atomic's
/// order, being compiled into the caller; it did not see the standard library's `Mutex`'s, see
/// ``Locked``.)
public final class SetOnceFlag: Sendable {
    #if canImport(Darwin)
    @usableFromInline let flag = Locked(false)
    #else
    @usableFromInline let flag = Atomic<Bool>(false)
    #endif

    /// A flag not yet set.
    public init() {}

    /// Whether the flag has been set.
    @inlinable
    public var isSet: Bool {
        #if canImport(Darwin)
        flag.withLock { $0 }
        #else
        flag.load(ordering: .acquiring)
        #endif
    }

    /// Sets the flag; returns whether this call set it (false when it was set already). For a
    /// backend's `close()`, which must release its resources once however often it is called.
    public func set() -> Bool {
        #if canImport(Darwin)
        flag.setOnce()
        #else
        !flag.exchange(true, ordering: .acquiringAndReleasing)
        #endif
    }
}
