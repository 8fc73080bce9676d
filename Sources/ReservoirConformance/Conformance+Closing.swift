import Foundation
import Observation
import OpenCombineShim
import Reservoir

extension ConformanceSuite {
    /// What `close()` does to observation: every subscription and live object ends exactly
    /// once, the same way on every backend (Backends.md "Observation").
    static let closingCases: [ConformanceCase] = [
        ConformanceCase("closing", "close() fails every fetch publisher with .closed, once, after delivering what was committed", waiting: { context in
            let store = context.store
            try store.insertItems(standardItems)
            let request = FetchRequest<Item>(where: \.rank != nil, sortBy: [.ascending(\.name)])
            let recorders = subscribeToEveryKind(store, request)
            try await store.write { tx in try tx.update(Item.self, id: 3) { $0.rank = 42 } }
            store.close()
            for (kind, recorder) in recorders {
                try await expectClosed(recorder, kind)
            }
            let differences = try await expectValue(recorders, "differences")
            let applied = differences.values.compactMap { $0 as? CollectionDifference<Item> }
                .reduce([Item]()) { $0.applying($1) ?? [] }
            try expect(applied.contains { $0.id == 3 && $0.rank == 42 }, "the commit made before close() reached the differences subscriber before it ended: \(applied)")

            // Made after close(): the same end, at once.
            for (kind, recorder) in subscribeToEveryKind(store, request) {
                try await expectClosed(recorder, "\(kind), subscribed after close()")
            }
        }),

        ConformanceCase("closing", "async sequences end when the store closes: fetch sequences throw .closed, changeSets.values finishes", waiting: { context in
            let store = context.store
            try store.insertItems(standardItems)
            let request = FetchRequest<Item>(sortBy: [.ascending(\.name)])
            let ended = Collected<String>()
            let differences = Task { () -> (any Error)? in
                defer { ended.append("differences(for:)") }
                do {
                    for try await _ in store.differences(for: request) {}
                    return nil
                } catch {
                    return error
                }
            }
            let record = Task { () -> (any Error)? in
                defer { ended.append("recordChanges(for:id:)") }
                do {
                    for try await _ in store.recordChanges(for: Item.self, id: 1) {}
                    return nil
                } catch {
                    return error
                }
            }
            let changeSets = Task {
                for await _ in store.changeSets.values {}
                ended.append("changeSets.values")
            }
            // Let the loops start; only how they end matters here.
            try await Task.sleep(for: .milliseconds(100))
            store.close()
            let allEnded = await eventually(timeout: .seconds(20)) { ended.values.count == 3 }
            if !allEnded {
                differences.cancel()
                record.cancel()
                changeSets.cancel()
            }
            try expect(allEnded, "every async loop ends after close(); these did: \(ended.values)")
            let differencesError = await differences.value
            let recordError = await record.value
            try expectEqual((differencesError as? ReservoirError)?.code, .closed, "differences(for:) loop ends by throwing .closed (got \(String(describing: differencesError)))")
            try expectEqual((recordError as? ReservoirError)?.code, .closed, "recordChanges(for:id:) loop ends by throwing .closed (got \(String(describing: recordError)))")
        }),

        ConformanceCase("closing", "close() sets .closed as the error of live queries, counts and sections, which keep their last contents", waiting: { context in
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { throw observationUnavailable() }
            let store = context.store
            try store.insertItems(standardItems)
            let request = FetchRequest<Item>(where: \.group != nil, sortBy: [.ascending(\.group), .ascending(\.name)])
            let expected = try store.fetch(request)
            let (query, count, sections) = await MainActor.run {
                (store.live(request), store.liveCount(request), store.liveSections(request, by: \.group))
            }
            store.close()
            let closed = await eventuallyOnMainActor {
                [query.error, count.error, sections.error].allSatisfy { ($0 as? ReservoirError)?.code == .closed }
            }
            let state = await MainActor.run {
                ("\([query.error, count.error, sections.error].map { String(describing: $0) })", query.elements, count.count)
            }
            try expect(closed, "error is .closed on the live query, count and sections after close(): \(state.0)")
            try expectEqual(state.1, expected, "the live query keeps its last elements")
            try expectEqual(state.2, expected.count, "the live count keeps its last count")
            let late = await MainActor.run { store.live(request).error }
            try expectEqual((late as? ReservoirError)?.code, .closed, "a live query made after close() reports .closed")
        }),

        ConformanceCase("closing", "a subscriber made in main-actor code gets other threads' commits on the main actor", waiting: { context in
            try await expectMainActorDelivery(from: context.store, on: context.store, "a commit from another thread")
        }),

        ConformanceCase("closing", "a subscriber made in main-actor code gets another store's commits on the main actor", requires: .multiProcess, waiting: { context in
            let other = try context.openAnother()
            try await expectMainActorDelivery(from: other, on: context.store, "a commit by another store on the same location")
        }),
    ]
}

/// One recorder per kind of store publisher, subscribed to `request` (and record 3, and the type).
private func subscribeToEveryKind(_ store: Store, _ request: FetchRequest<Item>) -> [(String, AnyObject)] {
    func record<P: Publisher>(_ publisher: P) -> LiveRecorder<Any> where P.Failure == any Error {
        let recorder = LiveRecorder<Any>()
        publisher.map { $0 as Any }.subscribe(recorder)
        return recorder
    }
    let changeSets = LiveRecorder<Any>()
    store.changeSets.map { $0 as Any }.setFailureType(to: (any Error).self).subscribe(changeSets)
    return [
        ("differences", record(store.differencesPublisher(for: request))),
        ("objects", record(store.objectsPublisher(for: request))),
        ("results changes", record(store.resultsChangesPublisher(for: request))),
        ("sections", record(store.sectionedChangesPublisher(for: FetchRequest<Item>(sortBy: [.ascending(\.name)]), by: \.name))),
        ("count", record(store.countPublisher(for: request))),
        ("record changes", record(store.publisher(for: Item.self, id: 3))),
        ("type changes", record(store.publisher(for: Item.self))),
        ("changeSets", changeSets),
    ]
}

private func expectValue(_ recorders: [(String, AnyObject)], _ kind: String) async throws -> LiveRecorder<Any> {
    guard let recorder = recorders.first(where: { $0.0 == kind })?.1 as? LiveRecorder<Any> else {
        throw ConformanceFailure(message: "no \(kind) recorder", file: #fileID, line: #line)
    }
    return recorder
}

/// `recorder` ends exactly once: `.finished` for `changeSets` (it cannot fail), `.closed` for the rest.
private func expectClosed(_ object: AnyObject, _ kind: String) async throws {
    guard let recorder = object as? LiveRecorder<Any> else { return }
    let ended = await eventually { recorder.completion != nil }
    try expect(ended, "\(kind): no completion after close()")
    // A second completion would arrive right behind the first: give it the chance.
    try await Task.sleep(for: .milliseconds(20))
    try expectEqual(recorder.completionCount, 1, "\(kind): completions after close()")
    switch recorder.completion {
    case .finished?:
        try expect(kind.hasPrefix("changeSets"), "\(kind): finished, expected a .closed failure")
    case let .failure(error)?:
        try expect(!kind.hasPrefix("changeSets"), "\(kind): failed with \(error), expected .finished")
        try expectEqual((error as? ReservoirError)?.code, .closed, "\(kind): the failure's code (\(error))")
    case nil:
        break
    }
}

/// Subscribes in main-actor code with a sink that touches main-actor state (which traps when
/// called anywhere else), commits through `writer` off the main actor, and waits for it there.
private func expectMainActorDelivery(from writer: Store, on store: Store, _ what: String) async throws {
    let request = FetchRequest<Item>(sortBy: [.ascending(\.name)])
    let seen = await MainActor.run { MainActorCounter() }
    await MainActor.run {
        seen.subscriptions = [
            store.differencesPublisher(for: request).sink(receiveCompletion: { _ in }, receiveValue: { _ in seen.count += 1 }),
            store.publisher(for: Item.self).sink(receiveCompletion: { _ in }, receiveValue: { _ in seen.typeChanges += 1 }),
            store.changeSets.receiveOnMainActor().sink { _ in seen.changeSets += 1 },
        ]
    }
    for step in 1...3 {
        try await Task.detached { try writer.write { tx in try tx.insert(Item(id: 100 + step, name: "from elsewhere \(step)")) } }.value
        let arrived = await eventuallyOnMainActor { seen.count == 1 + step && seen.typeChanges == step && seen.changeSets >= step }
        let counts = await MainActor.run { (seen.count, seen.typeChanges, seen.changeSets) }
        try expect(arrived, "\(what), step \(step): differences, type changes and change sets seen on the main actor: \(counts)")
    }
    await MainActor.run { seen.subscriptions = [] }
}

@MainActor
private final class MainActorCounter {
    var count = 0
    var typeChanges = 0
    var changeSets = 0
    var subscriptions: [AnyCancellable] = []
}

/// `eventually` for a condition on main-actor state: polls it on the main actor.
private func eventuallyOnMainActor(timeout: Duration = .seconds(10), _ condition: @escaping @MainActor @Sendable () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if await MainActor.run(body: condition) { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await MainActor.run(body: condition)
}
