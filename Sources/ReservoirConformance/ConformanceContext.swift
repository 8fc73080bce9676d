import Foundation
import Reservoir

/// What a case works with: the harness, its configuration, and the stores it opened.
public final class ConformanceContext: @unchecked Sendable {
    // @unchecked: `opened` is guarded by `lock`; the rest is immutable.
    let harness: ConformanceHarness
    /// The configuration string of this case's store.
    public let configuration: String
    /// The store the case runs on.
    public let store: Store
    private let lock = NSLock()
    private var opened: [Store] = []

    init(harness: ConformanceHarness) throws {
        self.harness = harness
        configuration = try harness.freshConfiguration()
        store = try Store.open(configuration, registry: harness.registry)
        opened = [store]
    }

    /// Opens another store on the same configuration (a second handle on the same data),
    /// with `option` (such as `mode=readonly`) added to its options when given.
    public func openAnother(adding option: String? = nil) throws -> Store {
        var configuration = configuration
        if let option { configuration += (configuration.contains("?") ? "&" : "?") + option }
        let another = try Store.open(configuration, registry: harness.registry)
        lock.lock()
        opened.append(another)
        lock.unlock()
        return another
    }

    /// Closes every store the case opened, then the harness cleans up.
    func finish() {
        lock.lock()
        let stores = opened
        opened = []
        lock.unlock()
        for store in stores { store.close() }
        harness.cleanup(configuration)
    }
}
