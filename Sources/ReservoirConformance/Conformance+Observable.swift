import Foundation
import Observation
import Reservoir

extension ConformanceSuite {
    /// The Observation-framework objects: `store.live(_:)` and `store.liveCount(_:)`.
    static let observableCases: [ConformanceCase] = [
        ConformanceCase("observable", "a live query tells observers of a commit on the main actor", waiting: { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { throw observationUnavailable() }
            let store = context.store
            try store.insertItems(standardItems)
            let request = FetchRequest<Item>(where: \.rank != nil, sortBy: [.descending(\.rank)])
            try await MainActor.run {
                let live = store.live(request)
                try expect(!live.isLoading, "isLoading after live(_:) on the main actor")
                try expectEqual(live.elements, try store.fetch(request), "elements after live(_:)")
                for step in 0..<3 {
                    let changed = Flag()
                    withObservationTracking { _ = live.elements } onChange: { changed.set() }
                    try store.write { tx in try tx.update(Item.self, id: 3) { $0.rank = 100 + step } }
                    try expect(changed.isSet, "step \(step): onChange after a commit that changed the results")
                    try expectEqual(live.elements, try store.fetch(request), "step \(step): elements equal a fresh fetch")
                    try expectEqual(live.count, live.elements.count, "step \(step): count")
                }
                let unchanged = Flag()
                withObservationTracking { _ = live.elements } onChange: { unchanged.set() }
                try store.write { tx in try tx.insert(AllTypes.sample(1)) }
                try store.write { tx in try tx.update(Item.self, id: 6) { $0.name = "not matched" } }
                try expect(!unchanged.isSet, "no onChange for commits that leave the results alone")
                live.cancel()
                try store.write { tx in try tx.delete(Item.self, id: 1) }
                try expect(!unchanged.isSet && live.elements.contains { $0.id == 1 }, "nothing applied after cancel()")
                try expectEqual(live.error.map { "\($0)" }, nil, "error")
            }
        }),

        ConformanceCase("observable", "a live query and live sections notify when a record changes only in its bytes", waiting: { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { throw observationUnavailable() }
            let store = context.store
            try await store.write { tx in try tx.insert(Item(id: 1, name: "caf\u{65}\u{301}", group: "g")) }
            let request = FetchRequest<Item>(sortBy: [.ascending(\.group)])
            try await MainActor.run {
                let live = store.live(request)
                let sections = store.liveSections(request, by: \.group)
                let changed = Flag()
                let sectionsChanged = Flag()
                withObservationTracking { _ = live.elements } onChange: { changed.set() }
                withObservationTracking { _ = sections.sections } onChange: { sectionsChanged.set() }
                // Equal under Swift's `==` (canonical equivalence), different bytes: a change the store reports.
                try store.write { tx in try tx.update(Item.self, id: 1) { $0.name = "caf\u{e9}" } }
                try expect(changed.isSet, "onChange for a record whose text changed only in its bytes")
                try expect(sectionsChanged.isSet, "live sections' onChange for the same change")
                try expect(live.elements.first.map { Array($0.name.utf8) } == Array("caf\u{e9}".utf8), "elements hold the new bytes")
                live.cancel()
                sections.cancel()
            }
        }),

        ConformanceCase("observable", "a live query applies commits from other threads on the main actor", waiting: { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { throw observationUnavailable() }
            let store = context.store
            let request = FetchRequest<Item>(sortBy: [.ascending(\.name)])
            let live = await MainActor.run { store.live(request) }
            for step in 0..<5 {
                let (changes, continuation) = AsyncStream<Void>.makeStream()
                await MainActor.run {
                    withObservationTracking { _ = live.elements } onChange: { continuation.yield() }
                }
                // The async write runs off the main thread: the change reaches the main actor in a block of its own.
                try await store.write { tx in
                    try tx.insert(Item(id: 10 + step, name: "n\(5 - step)"))
                    if step > 0 { try tx.delete(Item.self, id: 10 + step - 1) }
                }
                try await waitForFirst(changes, "step \(step): onChange for a commit on another thread")
                let elements = await MainActor.run { live.elements }
                try expectEqual(elements, try store.fetch(request), "step \(step): elements equal a fresh fetch")
            }
            await MainActor.run { live.cancel() }
        }),

        ConformanceCase("observable", "a live count follows the count; a failing live query reports its error", waiting: { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { throw observationUnavailable() }
            let store = context.store
            try await MainActor.run {
                let fruit = FetchRequest<Item>(where: \.group == "fruit")
                let count = store.liveCount(fruit)
                try expect(!count.isLoading, "isLoading after liveCount(_:)")
                try expectEqual(count.count, 0, "count of an empty store")
                var notified = 0
                let changed = Flag()
                withObservationTracking { _ = count.count } onChange: { changed.set() }
                try store.insertItems(standardItems)
                if changed.isSet { notified += 1 }
                try expectEqual(count.count, try store.count(fruit), "count after inserting")
                let untouched = Flag()
                withObservationTracking { _ = count.count } onChange: { untouched.set() }
                try store.write { tx in try tx.update(matching: fruit) { $0.name += "!" } }
                try expectEqual(notified, 1, "onChange when the count changed")
                try expect(!untouched.isSet, "no onChange when the count stayed")
                count.cancel()

                let failing = store.live(FetchRequest<Item>(where: \.note == "x"))
                guard let error = failing.error as? ReservoirError else {
                    throw ConformanceFailure(message: "a query on an unnamed field: expected an error, got \(String(describing: failing.error))", file: #fileID, line: #line)
                }
                try expectEqual(error.code, .invalidQuery, "error code")
                try expect(!failing.isLoading && failing.elements.isEmpty, "a failed live query is not loading and empty")
            }
        }),

        ConformanceCase("observable", "live sections follow commits; a key that is not the first sort key sets error", waiting: { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { throw observationUnavailable() }
            let store = context.store
            try store.insertItems(standardItems)
            try await MainActor.run {
                let request = FetchRequest<Item>(sortBy: [.descending(\.group), .ascending(\.name)])
                let live = store.liveSections(request, by: \.group)
                try expect(!live.isLoading, "isLoading after liveSections(_:by:)")
                try expectEqual(live.sections, try sectioned(store.fetch(request)), "sections after liveSections(_:by:)")
                let changed = Flag()
                withObservationTracking { _ = live.sections } onChange: { changed.set() }
                try store.write { tx in
                    try tx.update(Item.self, id: 4) { $0.group = "zebra" }
                    try tx.delete(matching: FetchRequest<Item>(where: \.group == "dessert"))
                }
                try expect(changed.isSet, "onChange after a commit that changed the sections")
                try expectEqual(live.sections, try sectioned(store.fetch(request)), "sections equal a fresh fetch grouped by group")
                try expectEqual(live.lastChange?.insertedSections, [0], "\"zebra\" inserted first (descending)")
                live.cancel()

                let refused = store.liveSections(FetchRequest<Item>(sortBy: [.ascending(\.name)]), by: \.group)
                guard let error = refused.error as? ReservoirError, error.code == .invalidQuery,
                      error.message.contains("group"), error.message.contains("name") else {
                    throw ConformanceFailure(message: "sections by a key that is not the first sort key: expected .invalidQuery naming group and name, got \(String(describing: refused.error))", file: #fileID, line: #line)
                }
                try expect(!refused.isLoading && refused.sections.isEmpty, "a refused live sections object is not loading and empty")
            }
        }),
    ]
}

func observationUnavailable() -> ConformanceFailure {
    ConformanceFailure(message: "the Observation framework needs macOS 14, iOS 17, tvOS 17 or watchOS 10", file: #fileID, line: #line)
}

/// A flag an observation's onChange sets, from whichever thread it runs on.
private final class Flag: @unchecked Sendable {
    // @unchecked: `value` is guarded by `lock`.
    private let lock = NSLock()
    private var value = false

    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }

    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

/// Waits for `stream`'s first element. A guard of a minute turns a lost notification into a
/// failure instead of a hung test run; it is not a timing check (delivery takes microseconds).
private func waitForFirst(_ stream: AsyncStream<Void>, _ what: String) async throws {
    let arrived = await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await _ in stream { return true }
            return false
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: 60_000_000_000)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
    try expect(arrived, "\(what): nothing arrived within a minute")
}
