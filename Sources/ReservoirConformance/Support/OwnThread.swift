import Foundation

/// Runs `body` on a new thread and returns its result: for synchronous work that takes long
/// or waits by polling, which on one of Swift's cooperative threads (as many as cores) would
/// starve the other tests of the same run, and be starved by them.
func onOwnThread<R: Sendable>(_ body: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
