import Foundation
import Observation
import Reservoir

/// What watches a replica besides the main store's own subscriptions, checked after every
/// step against the model on that backend alone (their timing differs between backends, their
/// outcome must not):
///
/// - a second `Store` on the same location carrying the full set of subscriptions (backends
///   with `multiProcess`; it follows the main store's and everyone's commits through the change
///   log, as another process's store would): every folding subscriber must equal a fresh fetch;
/// - `@Observable` live objects on the main store (`LiveQuery`, `LiveCount`), observed with
///   `withObservationTracking` re-armed every step: their contents must equal the model's and
///   an observer must have been told whenever they changed.
final class DifferentialWatchers {
    private let watcher: Store?
    private var watcherObservers: DifferentialObservers?
    private var live: AnyObject?

    init(configuration: String, registry: BackendRegistry, main: Store) throws {
        if main.capabilities.contains(.multiProcess) {
            let opened = try Store.open(configuration, registry: registry)
            watcher = opened
            watcherObservers = DifferentialObservers(store: opened)
        } else {
            watcher = nil
        }
        attachLive(to: main)
    }

    func finish() {
        watcherObservers?.cancelAll()
        watcher?.close()
        cancelLive()
    }

    /// The main store was reopened: the live objects follow it (the watcher store stays).
    func mainStoreReopened(_ store: Store) {
        cancelLive()
        attachLive(to: store)
    }

    /// What disagrees with the model after a step, on this backend; empty when all agrees.
    func problems(model: DifferentialModel) -> [String] {
        var found: [String] = []
        if let watcher, let observers = watcherObservers {
            watcher.pollExternalChanges()
            let seen = observers.drain()
            found += seen.problems.map { "the watching store: \($0)" }
            for (name, request) in observers.foldChecks {
                let got = DifferentialRender.list(observers.folded(name))
                let expected = DifferentialRender.list(model.fetch(request))
                if got != expected { found.append("the watching store's subscriber \"\(name)\" folds to \(got), expected \(expected)") }
            }
        }
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *), let live = live as? LiveObjects {
            found += live.problems(expected: model.fetch(LiveObjects.request))
        }
        return found
    }

    private func attachLive(to store: Store) {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        live = LiveObjects(store: store)
    }

    private func cancelLive() {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *), let live = live as? LiveObjects else { return }
        live.cancel()
        self.live = nil
    }
}

/// A `LiveQuery` and a `LiveCount` of one request, made and read on the main actor.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
private final class LiveObjects: @unchecked Sendable {
    // @unchecked: `query`, `count`, `told` and `last` are only touched on the main queue.
    static let request = 1

    private var query: LiveQuery<DifferentialNote>?
    private var count: LiveCount<DifferentialNote>?
    /// Set by the observation armed after the previous check.
    private var told = false
    private var countTold = false
    /// What the previous check saw, rendered.
    private var last: String?
    private var lastCount: Int?

    init(store: Store) {
        onMain {
            query = store.live(DifferentialNote.requests[Self.request])
            count = store.liveCount(DifferentialNote.requests[Self.request])
            arm()
        }
    }

    func cancel() {
        onMain {
            query?.cancel()
            count?.cancel()
        }
    }

    /// Waits (up to 5 s of main-queue turns) for the objects to show `expected`; then says what
    /// disagrees: contents, or a change no observer was told of.
    func problems(expected: [DifferentialNote]) -> [String] {
        let want = DifferentialRender.list(expected)
        let deadline = ContinuousClock.now + .seconds(5)
        var state: (elements: String, count: Int, told: Bool, countTold: Bool, error: String?) = ("", 0, false, false, nil)
        repeat {
            state = onMain {
                (DifferentialRender.list(query?.elements ?? []), count?.count ?? -1, told, countTold,
                 (query?.error ?? count?.error).map { "\($0)" })
            }
            if state.elements.utf8.elementsEqual(want.utf8) && state.count == expected.count { break }
            Thread.sleep(forTimeInterval: 0.002)
        } while ContinuousClock.now < deadline
        var found: [String] = []
        if let error = state.error { found.append("live objects failed: \(error)") }
        if !state.elements.utf8.elementsEqual(want.utf8) {
            found.append("LiveQuery r\(Self.request) holds \(state.elements), expected \(want)")
        }
        if state.count != expected.count { found.append("LiveCount r\(Self.request) is \(state.count), expected \(expected.count)") }
        if let last, !last.utf8.elementsEqual(state.elements.utf8), !state.told {
            found.append("LiveQuery r\(Self.request) changed from \(last) to \(state.elements) without telling its observer")
        }
        if let lastCount, lastCount != state.count, !state.countTold {
            found.append("LiveCount r\(Self.request) changed from \(lastCount) to \(state.count) without telling its observer")
        }
        last = state.elements
        lastCount = state.count
        onMain { arm() }
        return found
    }

    /// Re-arms the observations; runs on the main queue.
    @MainActor private func arm() {
        told = false
        countTold = false
        guard let query, let count else { return }
        withObservationTracking { _ = query.elements } onChange: { [weak self] in self?.told = true }
        withObservationTracking { _ = count.count } onChange: { [weak self] in self?.countTold = true }
    }

    private func onMain<R: Sendable>(_ body: @MainActor () -> R) -> R {
        if Thread.isMainThread { return MainActor.assumeIsolated(body) }
        return DispatchQueue.main.sync { MainActor.assumeIsolated(body) }
    }
}
