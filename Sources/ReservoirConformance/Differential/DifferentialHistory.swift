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
struct DifferentialHistory {
    private(set) var token: HistoryToken?
    private var present: Set<Int> = []
    private var reads = 0

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
        // Everything after the token, folded onto what was consumed, must be the model's ids.
        var complete = present
        for changeSet in try main.history(after: previous, limit: 10_000) { Self.fold(changeSet, into: &complete) }
        let expected = Set(DifferentialNote.ids.filter { model.get($0) != nil })
        if complete != expected {
            problems.append("the history consumer at \(previous) believes ids \(complete.sorted()) exist, the model holds \(expected.sorted())")
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
