import Foundation

/// Waits, polling every 5 ms, until `condition` holds or `timeout` passes; returns whether
/// it held. For conditions that become true asynchronously (a delivery from another
/// thread or process), never as a timing assertion. The one polling loop of the tests:
/// `ChildProcess` waits through it too.
public func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try condition()
}

/// `eventually` for code that cannot wait asynchronously (a helper process's main code):
/// blocks the calling thread between polls.
public func eventuallyBlocking(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return try condition()
}
