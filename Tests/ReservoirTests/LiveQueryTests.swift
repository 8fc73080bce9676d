import Foundation
import Observation
import Reservoir
import Testing

/// The README's record type, as "Using the library" declares it.
private struct Todo: Storable {
    var id: UUID
    var title: String
    var done: Bool
    var priority: Int
    var due: Date?
    static let schema = Schema<Todo>("todos", fields: [
        .field(\.title), .field(\.done), .field(\.priority, indexed: true), .field(\.due),
    ])
}

/// The README's Linux example of `LiveQuery` (`watchOpenTodos`), with its printed claims
/// turned into checks. The conformance suite's
/// "observable" group covers every backend; this keeps the README's code honest.
@Suite("LiveQuery, as the README shows it")
struct LiveQueryTests {
    @Test @MainActor
    func readmeExample() throws {
        let store = try Store.open("memory:")
        let open = store.live(FetchRequest<Todo>(where: \.done == false, sortBy: [.descending(\.priority)]))
        let changed = Counter()
        withObservationTracking { _ = open.elements } onChange: { changed.increment() }
        try store.write { tx in try tx.insert(Todo(id: UUID(), title: "Water the plants", done: false, priority: 1)) }
        #expect(changed.value == 1)
        #expect(open.count == 1)
        #expect(open.elements.map(\.title) == ["Water the plants"])
        #expect(!open.isLoading && open.error == nil)
    }

    @Test @MainActor
    func releasingTheObjectStopsItsSubscription() throws {
        let store = try Store.open("memory:")
        weak var released: LiveQuery<Todo>?
        do {
            let live = store.live(FetchRequest<Todo>())
            released = live
            #expect(live.elements.isEmpty)
        }
        #expect(released == nil, "the feed must not keep its LiveQuery alive")
        try store.write { tx in try tx.insert(Todo(id: UUID(), title: "after release", done: false, priority: 0)) }
    }
}

/// Counts onChange calls, which may come from any thread.
private final class Counter: @unchecked Sendable {
    // @unchecked: `count` is guarded by `lock`.
    private let lock = NSLock()
    private var count = 0

    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}
