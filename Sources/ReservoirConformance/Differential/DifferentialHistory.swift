import Foundation
import Reservoir

/// A history consumer beside each replica (#32): it keeps a token, as an app would in a file,
/// and after every step reads a few change sets after it (1 to 3, so it lags and resumes at
/// ever different points), from the main store or, where the backend allows one, from a
/// second store on the same location, and across the differential run's reopenings. It folds
/// the ids each change set inserted, updated or deleted into the set of ids it believes exist.
///
/// Checked after every step: the tokens it received rise one change set at a time, never
/// repeating (each change set exactly once); and its belief, with everything after its token
/// folded in, is exactly the ids the model holds (nothing missed, nothing invented).
///
/// Where the backend follows ``HistoryRetention``, it holds the history after its token
/// (``Store/retainHistory(for:from:)``, moved on after every read) and after a token it saved a
/// while ago, which it resumes from after every step too (the saved belief, with everything after
/// the saved token folded in, must also be the model's ids): run with a short `retention`, the
/// log is trimmed under both, so a hold not honoured fails the run with `.historyExpired`.
struct DifferentialHistory {
    private(set) var token: HistoryToken?
    private var present: Set<Int> = []
    private var reads = 0
    /// An earlier token and the belief as of it, resumed from after every step.
    private var saved: (token: HistoryToken, present: Set<Int>)?

    /// Reads the next few change sets after the token and folds them in; returns what is wrong.
    mutating func advance(main: Store, second: Store?, model: DifferentialModel) throws -> [String] {
        if token == nil { token = HistoryToken(store: try main.currentHistoryToken.store, position: .start) }
        guard let after = token else { return [] }
        reads += 1
        let source = reads % 2 == 0 ? (second ?? main) : main
        let taken = try source.history(after: after, limit: reads % 3 + 1)
        var problems: [String] = []
        var previous = after
        for changeSet in taken {
            if changeSet.token.sequence <= previous.sequence {
                problems.append("history after \(previous) gave \(changeSet.token), not a later change set")
            }
            Self.fold(changeSet, into: &present)
            previous = changeSet.token
        }
        token = previous
        let holds = main.backend.historyRetention != nil
        if holds { try main.retainHistory(for: "differential", from: previous) }
        if saved == nil || reads % 7 == 0 {
            saved = (previous, present)
            if holds { try main.retainHistory(for: "differential.saved", from: previous) }
        }
        // Everything after the token, folded onto what was consumed, must be the model's ids;
        // so must everything after the saved token, folded onto the belief saved with it.
        let expected = Set(DifferentialNote.ids.filter { model.get($0) != nil })
        for (from, belief) in [(previous, present)] + (saved.map { [($0.token, $0.present)] } ?? []) {
            var complete = belief
            for changeSet in try source.history(after: from, limit: 10_000) { Self.fold(changeSet, into: &complete) }
            if complete != expected {
                problems.append("the history consumer resuming from \(from) believes ids \(complete.sorted()) exist, the model holds \(expected.sorted())")
            }
        }
        return problems
    }

    private static func fold(_ changeSet: HistoryChangeSet, into ids: inout Set<Int>) {
        for change in changeSet.changes where change.entity == DifferentialNote.schema.name {
            guard case let .integer(id) = change.id else { continue }
            if change.kind == .deleted { ids.remove(Int(id)) } else { ids.insert(Int(id)) }
        }
    }
}
