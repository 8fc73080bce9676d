import Foundation

// Helpers the suite's own cases and every backend's tests (ours and third parties') share.

/// A thread-safe box for values collected from publishers, whatever thread delivers them.
public final class Collected<T>: @unchecked Sendable {
    // @unchecked: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [T] = []

    public init() {}

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

/// Waits, polling every 5 ms, until `condition` holds or `timeout` passes; returns whether
/// it held. For conditions that become true asynchronously (a delivery from another
/// thread or process), never as a timing assertion.
public func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try condition()
}
