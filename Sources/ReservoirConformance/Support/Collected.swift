import Foundation

// Test support that the suite's own cases and every backend's tests (ours and third
// parties') share lives in this folder: `Collected`, `eventually`, `TemporaryDirectory`,
// `ChildProcess`, `LiveRecorder` and `ChangeRecorder`.

/// A thread-safe box for values collected from publishers, whatever thread delivers them.
public final class Collected<T>: @unchecked Sendable {
    // @unchecked: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [T] = []

    public init() {}

    /// Adds `item` at the end.
    public func append(_ item: T) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    /// What was collected so far, in arrival order.
    public var values: [T] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}
