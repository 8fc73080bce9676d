import Foundation
import OpenCombineShim
import Reservoir

/// The lost-tail check (#30 item 1): a store loses its newest commits and hands their
/// sequence numbers out again (an older copy restored, asynchronous commit and a server
/// crash, no fsync and a power loss). A live watch that had seen a lost commit must re-read,
/// and never take a new commit with a reused number as one it has seen.
///
/// A backend's tests supply how a commit is lost (``run(after:watcher:other:losing:prepare:lose:)``);
/// the scenario and what it checks are the same everywhere:
/// 1. `watcher` commits a seed record; `prepare` runs (take the backup, say);
/// 2. a live fetch on `watcher` starts; `losing` commits a second record, which the watch shows;
/// 3. `lose` runs: the second commit is gone;
/// 4. per ``After``: nothing more, another store commits, or the watcher commits, the last two
///    taking the lost commit's number;
/// 5. the watch must come to equal a fresh fetch, and follow a later commit as usual.
public enum LostTail {
    /// What happens after the loss.
    public enum After: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Nothing more is committed: the store's newest sequence is below the watch's.
        case nothing
        /// Another `Store` commits, reusing the lost commit's number.
        case anotherStoreWrites
        /// The watching store commits itself, reusing the lost commit's number.
        case theWatcherWrites

        public var description: String { rawValue }
    }

    /// Whether `problem`, one of ``run(after:watcher:other:losing:prepare:lose:timeout:)``'s, says
    /// the loss did not happen (the scenario proves nothing then, rather than finding a fault): a
    /// test whose way of losing a commit depends on timing (a server's WAL writer) may try again.
    public static func saysNothingWasLost(_ problem: String) -> Bool {
        problem.contains(notLost)
    }

    private static let notLost = "so the check proves"

    /// Runs the scenario; returns what went wrong, empty when nothing did.
    /// `other` and `losing` may be the same store; both are on `watcher`'s location.
    public static func run(after: After, watcher: Store, other: Store, losing: Store,
                           prepare: () throws -> Void, lose: () throws -> Void,
                           timeout: Duration = .seconds(10)) async throws -> [String] {
        var step = "the seed commit"
        do {
            return try await scenario(after: after, watcher: watcher, other: other, losing: losing,
                                      prepare: prepare, lose: lose, timeout: timeout, step: &step)
        } catch {
            throw StepFailed(step: step, after: after, error: error)
        }
    }

    /// An error a step of the scenario threw, naming the step.
    public struct StepFailed: Error, CustomStringConvertible {
        public let step: String
        public let after: After
        public let error: any Error
        public var description: String { "lost tail (after: \(after)): \(step) threw: \(error)" }
    }

    private static func scenario(after: After, watcher: Store, other: Store, losing: Store,
                                 prepare: () throws -> Void, lose: () throws -> Void,
                                 timeout: Duration, step: inout String) async throws -> [String] {
        var problems: [String] = []
        try await watcher.write { try $0.insert(Item(id: 1, name: "seed")) }
        step = "prepare"
        try prepare()
        let request = FetchRequest<Item>(sortBy: [.ascending(\.id)])
        let seen = Collected<[Int]>()
        let subscription = watcher.objectsPublisher(for: request)
            .sink(receiveCompletion: { _ in }, receiveValue: { seen.append($0.map(\.id)) })
        defer { subscription.cancel() }
        step = "the commit about to be lost"
        try await losing.write { try $0.insert(Item(id: 2, name: "about to be lost")) }
        if !(await eventually(timeout: timeout) { seen.values.last == [1, 2] }) {
            problems.append("the watch never showed the commit about to be lost: \(String(describing: seen.values.last))")
        }
        step = "reading the sequence before the loss"
        let sequenceSeen = try await watcher.read { try $0.lastSequence() }

        step = "losing the commit"
        try lose()
        step = "the commit after the loss"
        switch after {
        case .nothing: break
        case .anotherStoreWrites: try await other.write { try $0.insert(Item(id: 3, name: "after the loss")) }
        case .theWatcherWrites: try await watcher.write { try $0.insert(Item(id: 3, name: "after the loss")) }
        }
        let expected = after == .nothing ? [1] : [1, 3]
        step = "the fetch after the loss"
        let fresh = try watcher.fetch(request).map(\.id)
        if fresh != expected {
            problems.append("the store holds \(fresh) after the loss, not \(expected): the commit was not lost, \(notLost) nothing")
        }
        step = "reading the sequence after the loss"
        if after != .nothing, try await watcher.read({ try $0.lastSequence() }) != sequenceSeen {
            problems.append("the commit after the loss did not reuse the lost one's number \(sequenceSeen), \(notLost) less than it should")
        }
        if !(await eventually(timeout: timeout) { seen.values.last == fresh }) {
            problems.append("after the loss the watch shows \(String(describing: seen.values.last)), the store holds \(fresh)")
        }
        step = "the later commit"
        try await other.write { try $0.insert(Item(id: 4, name: "later")) }
        if !(await eventually(timeout: timeout) { seen.values.last == fresh + [4] }) {
            problems.append("after a later commit the watch shows \(String(describing: seen.values.last)), the store holds \(fresh + [4])")
        }
        return problems
    }
}
