import Foundation
import OpenCombineShim
import Reservoir

/// Records every change set a store publishes, from any thread.
public final class ChangeRecorder: @unchecked Sendable {
    // @unchecked: `recorded` is guarded by `lock`.
    private let lock = NSLock()
    private var recorded: [ChangeSet] = []
    private var cancellable: AnyCancellable?

    /// Starts recording `store`'s change sets.
    public init(_ store: Store) {
        cancellable = store.changeSets.sink { [weak self] changeSet in
            guard let self else { return }
            self.lock.lock()
            self.recorded.append(changeSet)
            self.lock.unlock()
        }
    }

    /// The change sets received so far, in order.
    public var changeSets: [ChangeSet] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    /// Stops recording.
    public func cancel() { cancellable?.cancel() }
}
