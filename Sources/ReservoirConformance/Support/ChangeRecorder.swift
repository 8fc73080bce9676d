import Foundation
import OpenCombineShim
import Reservoir

/// Records every change set a store publishes, from any thread.
final class ChangeRecorder: @unchecked Sendable {
    // @unchecked: `recorded` is guarded by `lock`.
    private let lock = NSLock()
    private var recorded: [ChangeSet] = []
    private var cancellable: AnyCancellable?

    init(_ store: Store) {
        cancellable = store.changeSets.sink { [weak self] changeSet in
            guard let self else { return }
            self.lock.lock()
            self.recorded.append(changeSet)
            self.lock.unlock()
        }
    }

    var changeSets: [ChangeSet] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    func cancel() { cancellable?.cancel() }
}
