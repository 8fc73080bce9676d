/// Which change sets a live fetch can be affected by, as the ``ChangeHub`` routes them.
///
/// A fetch whose predicate requires one column to equal one of a few values (`channel == 7`,
/// `channel IN (7, 8)`, either alone or as one term of a top-level AND) is *keyed*: a changed
/// row reaches it only when its new value of that column is one of the keys, or when the fetch
/// holds the record (the hub asks the store's ``SharedRecords`` who holds it: a record moving
/// out of the fetch, or deleted, carries only its new row or its id). Failing such a term, a fetch whose
/// top-level AND bounds one column (`score > 3`, `day >= a AND day < b`) is *ranged*: a
/// changed row reaches it when its new value of that column is in the range, or when the
/// fetch holds the record. Any other fetch, and any fetch with an offset (whose hidden prefix
/// it does not hold, so a record leaving it goes unseen by holdings), is routed every change
/// set of its entity and checks it itself, as before routing existed.
struct SubscriptionRoute: Sendable, Equatable {
    /// The entity whose change sets can affect the fetch.
    let entity: String
    /// The column whose value decides membership, when the predicate has such a term.
    let column: String?
    /// The values of `column` a member can have (empty when `column` is nil or the route is ranged).
    let keys: [Value]
    /// The values of `column` a member can have, when the route is ranged rather than keyed.
    let range: ValueRange?

    /// The route of a live fetch running `query`.
    init(query: Query) {
        entity = query.entity.name
        // With an offset the hidden prefix is not held, so only every change will do.
        let predicate = query.offset == 0 ? query.predicate : nil
        if let predicate, let (column, keys) = Self.equalityTerm(in: predicate) {
            (self.column, self.keys, range) = (column, keys, nil)
        } else if let predicate, let (column, range) = Self.rangeTerm(in: predicate) {
            (self.column, keys, self.range) = (column, [], range)
        } else {
            (column, keys, range) = (nil, [], nil)
        }
    }

    /// Whether changes are routed by key or range (and holdings) rather than sent for every
    /// change to the entity.
    var isKeyed: Bool { column != nil }

    /// How many keys a term may list and still be indexed: past this, a long IN list costs
    /// more to register than checking every change costs the fetch.
    static let maximumKeys = 64

    /// The first equality term that every match must satisfy, searched through top-level ANDs.
    private static func equalityTerm(in predicate: RowPredicate) -> (String, [Value])? {
        switch predicate {
        case let .compare(column, .equal, value):
            return (column, [value])
        case let .isIn(column, values) where values.count <= maximumKeys:
            // An empty IN matches nothing: keyed with no keys, only holders (none) reach it.
            return (column, values)
        case let .and(parts):
            for part in parts {
                if let term = equalityTerm(in: part) { return term }
            }
            return nil
        default:
            // OR, NOT, ranges, string matching: no single value decides membership.
            return nil
        }
    }

    /// The range the first bounded column of the top-level AND must lie in: every bound on
    /// that column, intersected.
    private static func rangeTerm(in predicate: RowPredicate) -> (String, ValueRange)? {
        var found: (column: String, range: ValueRange)?
        func collect(_ predicate: RowPredicate) {
            switch predicate {
            case let .compare(column, op, operand):
                guard let range = ValueRange(op, operand) else { return }
                if let current = found {
                    if current.column == column { found = (column, current.range.intersection(range)) }
                } else {
                    found = (column, range)
                }
            case let .and(parts):
                parts.forEach(collect)
            default:
                break
            }
        }
        collect(predicate)
        return found.map { ($0.column, $0.range) }
    }
}
