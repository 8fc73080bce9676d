import Foundation
import OpenCombineShim
import Reservoir

/// Every kind of live observation the library offers, subscribed on one store: a change
/// publisher per request, whole-array and table-view publishers, one subscriber that holds
/// back demand, one that is cancelled and resubscribed, a record's and a type's publishers,
/// and the raw change sets. Each writes what it receives as text lines, drained after each
/// step and compared across backends; each folds what it receives so the result can be
/// compared with a fresh fetch.
final class DifferentialObservers: @unchecked Sendable {
    // @unchecked: the mutable state is guarded by `lock`; values arrive on whatever thread
    // delivers them (the writer's, or the store's poller for other stores' commits).
    private let lock = NSLock()
    private var lines: [String: [String]] = [:]
    private var changeSets: [String] = []
    /// What each folding subscriber's values add up to.
    private var folded: [String: [DifferentialNote]] = [:]
    private var problems: [String] = []
    /// How many completions each subscriber received: closing the store ends each once.
    private var completions: [String: Int] = [:]
    private var cancellables: [String: AnyCancellable] = [:]
    private let limited = LiveRecorder<CollectionDifference<DifferentialNote>>(initialDemand: .max(1))
    /// Set while an external write's change set may arrive: the type publisher's deleted
    /// group is left out then, since only local commits know the rows deleted records had.
    private var externalStep = false

    static let changesRequests = Array(DifferentialNote.requests.indices)
    static let objectsRequests = [2, 3]
    static let resultsRequests = [1, 5]
    static let limitedRequest = 4
    static let resubscribedRequest = 6
    static let watchedIDs = [1, 4]

    /// The subscribers whose folded values must equal a fresh fetch of a request, by name.
    var foldChecks: [(name: String, request: Int)] {
        Self.changesRequests.map { ("changes r\($0)", $0) } + Self.objectsRequests.map { ("objects r\($0)", $0) }
            + Self.resultsRequests.map { ("results r\($0)", $0) } + [("resubscribed r\(Self.resubscribedRequest)", Self.resubscribedRequest)]
    }

    init(store: Store) {
        let requests = DifferentialNote.requests
        for index in Self.changesRequests {
            subscribeChanges("changes r\(index)", store.differencesPublisher(for: requests[index]))
        }
        for index in Self.objectsRequests {
            let name = "objects r\(index)"
            keep(name, store.objectsPublisher(for: requests[index]).sink(receiveCompletion: completion(name)) { [weak self] notes in
                self?.record(name, DifferentialRender.list(notes), folded: notes)
            })
        }
        for index in Self.resultsRequests {
            let name = "results r\(index)"
            keep(name, store.resultsChangesPublisher(for: requests[index]).sink(receiveCompletion: completion(name)) { [weak self] change in
                self?.receive(change, name: name)
            })
        }
        subscribeChanges("resubscribed r\(Self.resubscribedRequest)", store.differencesPublisher(for: requests[Self.resubscribedRequest]))
        let limitedName = "limited r\(Self.limitedRequest)"
        limited.reaction = { [weak self] difference, _ in self?.record(limitedName, Self.render(difference)) }
        store.differencesPublisher(for: requests[Self.limitedRequest]).subscribe(limited)
        for id in Self.watchedIDs {
            let name = "record \(id)"
            keep(name, store.publisher(for: DifferentialNote(id: id, title: "")).sink(receiveCompletion: completion(name)) { [weak self] note, kind in
                self?.record(name, "\(kind) \(note.map(\.description) ?? "nil")")
            })
        }
        keep("type", store.publisher(for: DifferentialNote.self).sink(receiveCompletion: completion("type")) { [weak self] groups in
            self?.receive(groups)
        })
        keep("change sets", store.changeSets.sink(receiveCompletion: { [weak self] _ in
            self?.noteCompletion("change sets")
        }, receiveValue: { [weak self] changeSet in
            guard let self else { return }
            lock.lock()
            changeSets.append(DifferentialRender.changeSet(changeSet))
            lock.unlock()
        }))
        self.store = store
    }

    private weak var store: Store?

    // MARK: - Steps that act on subscriptions

    /// The subscriber holding back demand asks for `n` more.
    func request(_ n: Int) {
        limited.request(.max(n))
    }

    /// Cancels one subscription and makes it anew; its first value is the full list again.
    func resubscribe() {
        guard let store else { return }
        let name = "resubscribed r\(Self.resubscribedRequest)"
        lock.lock()
        let old = cancellables.removeValue(forKey: name)
        folded[name] = nil
        lock.unlock()
        old?.cancel()
        subscribeChanges(name, store.differencesPublisher(for: DifferentialNote.requests[Self.resubscribedRequest]))
    }

    func setExternalStep(_ external: Bool) {
        lock.lock()
        externalStep = external
        lock.unlock()
    }

    func cancelAll() {
        lock.lock()
        let all = cancellables
        cancellables = [:]
        lock.unlock()
        for cancellable in all.values { cancellable.cancel() }
        limited.cancel()
    }

    // MARK: - What was seen

    /// Lines received since the last call, by subscriber, and the change sets.
    func drain() -> (lines: [String: [String]], changeSets: [String], problems: [String]) {
        lock.lock()
        defer {
            lines = [:]
            changeSets = []
            problems = []
            lock.unlock()
        }
        return (lines, changeSets, problems)
    }

    func folded(_ name: String) -> [DifferentialNote] {
        lock.lock()
        defer { lock.unlock() }
        return folded[name] ?? []
    }

    // MARK: - Receiving

    private func subscribeChanges(_ name: String, _ publisher: FetchedDifferencesPublisher<DifferentialNote>) {
        keep(name, publisher.sink(receiveCompletion: completion(name)) { [weak self] difference in
            guard let self else { return }
            lock.lock()
            let before = folded[name]
            lock.unlock()
            guard let after = (before ?? []).applying(difference) else {
                record(name, Self.render(difference), problem: "\(name): a difference does not apply to the list its earlier ones built")
                return
            }
            // Only the first value (the current results, as insertions) may be empty.
            let empty = difference.isEmpty && before != nil
            record(name, Self.render(difference), folded: after, problem: empty ? "\(name): an empty difference was sent" : nil)
        })
    }

    private func receive(_ change: ResultsChange<DifferentialNote>, name: String) {
        lock.lock()
        let before = folded[name] ?? []
        lock.unlock()
        let text = "del \(change.deleted) ins \(change.inserted) mov \(change.moved.map { "\($0.old)>\($0.new)" }) upd \(change.updated.map { "\($0.old)>\($0.new)" }) -> \(DifferentialRender.list(change.results))"
        let problem: String?
        do {
            let after: [DifferentialNote] = try change.applied(to: before) { $0 }
            problem = after == change.results ? nil : "\(name): applying the change by its positions gave \(DifferentialRender.list(after)), not its results"
        } catch {
            problem = "\(name): the change does not fit the list the previous ones built: \(error)"
        }
        record(name, text, folded: change.results, problem: problem)
    }

    private func receive(_ groups: [([DifferentialNote], ChangeType)]) {
        lock.lock()
        let external = externalStep
        lock.unlock()
        let shown = groups.filter { !(external && $0.1 == .deleted) }
        guard !shown.isEmpty else { return }
        record("type", shown.map { "\($0.1) \(DifferentialRender.list($0.0.sorted { $0.id < $1.id }))" }.joined(separator: "; "))
    }

    private func record(_ name: String, _ line: String, folded notes: [DifferentialNote]? = nil, problem: String? = nil) {
        lock.lock()
        lines[name, default: []].append(line)
        if let notes { folded[name] = notes }
        if let problem { problems.append(problem) }
        lock.unlock()
    }

    private func keep(_ name: String, _ cancellable: AnyCancellable) {
        lock.lock()
        cancellables[name] = cancellable
        lock.unlock()
    }

    private func noteCompletion(_ name: String) {
        lock.lock()
        completions[name, default: 0] += 1
        lock.unlock()
    }

    /// After the store closed: every subscriber ended exactly once, the change sets finished
    /// and the others failed with `.closed` (Backends.md "Closing"); what did not, as problems.
    func endedByClose() -> [String] {
        lock.lock()
        defer { lock.unlock() }
        var found: [String] = []
        for name in cancellables.keys.sorted() {
            let count = completions[name] ?? 0
            if count != 1 { found.append("\(name): \(count) completions after close(), expected 1") }
            if name != "change sets", lines[name]?.last != "failure closed" {
                found.append("\(name): ended with \(lines[name]?.last ?? "nothing") after close(), expected failure closed")
            }
        }
        let limitedEnded = limited.completionCount == 1 && (limited.completion.map { completion -> Bool in
            if case let .failure(error) = completion { return (error as? ReservoirError)?.code == .closed }
            return false
        } ?? false)
        if !limitedEnded { found.append("limited r\(Self.limitedRequest): did not fail once with .closed after close()") }
        return found
    }

    private func completion(_ name: String) -> (Subscribers.Completion<any Error>) -> Void {
        { [weak self] completion in
            self?.noteCompletion(name)
            switch completion {
            case .finished: self?.record(name, "finished")
            case let .failure(error): self?.record(name, "failure \((error as? ReservoirError)?.code.description ?? "\(error)")")
            }
        }
    }

    static func render(_ difference: CollectionDifference<DifferentialNote>) -> String {
        difference.map { change in
            switch change {
            case let .remove(offset, note, _): "-\(offset) \(note.id)"
            case let .insert(offset, note, _): "+\(offset) \(note)"
            }
        }.joined(separator: ", ")
    }
}
