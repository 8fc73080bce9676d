/// The values a range predicate on one column admits (`x > 3`, `x >= 3 AND x < 9`), in the
/// contract's total order; either end may be open. Null is never in a range, as `<`, `<=`,
/// `>`, `>=` never match null.
struct ValueRange: Sendable, Equatable {
    /// One end of a range: a value, and whether the value itself is in the range.
    struct Bound: Sendable, Equatable {
        let value: Value
        let inclusive: Bool
    }

    /// The lowest end; nil when the range has none.
    var lower: Bound?
    /// The highest end; nil when the range has none.
    var upper: Bound?

    /// The range of `column op operand`, when `op` is one of the four orderings and the
    /// operand is not null (a comparison with null matches nothing and is left unindexed).
    init?(_ op: ComparisonOperator, _ operand: Value) {
        guard !operand.isNull else { return nil }
        switch op {
        case .greater: lower = Bound(value: operand, inclusive: false)
        case .greaterOrEqual: lower = Bound(value: operand, inclusive: true)
        case .less: upper = Bound(value: operand, inclusive: false)
        case .lessOrEqual: upper = Bound(value: operand, inclusive: true)
        case .equal, .notEqual: return nil
        }
    }

    init(lower: Bound?, upper: Bound?) {
        self.lower = lower
        self.upper = upper
    }

    /// Whether `value` is in the range.
    func contains(_ value: Value) -> Bool {
        !value.isNull && Self.lowerAdmits(lower, value) && Self.upperAdmits(upper, value)
    }

    /// The values in both ranges (both terms of an AND must hold).
    func intersection(_ other: ValueRange) -> ValueRange {
        let lower = Self.compareLower(self.lower, other.lower) >= 0 ? self.lower : other.lower
        let upper = Self.compareUpper(self.upper, other.upper) <= 0 ? self.upper : other.upper
        return ValueRange(lower: lower, upper: upper)
    }

    // MARK: - Bounds

    /// Whether `value` is at or past `lower` (no lower end admits everything).
    static func lowerAdmits(_ lower: Bound?, _ value: Value) -> Bool {
        guard let lower else { return true }
        let order = Value.compare(lower.value, value)
        return order < 0 || (order == 0 && lower.inclusive)
    }

    /// Whether `value` is at or before `upper` (no upper end admits everything).
    static func upperAdmits(_ upper: Bound?, _ value: Value) -> Bool {
        guard let upper else { return true }
        let order = Value.compare(value, upper.value)
        return order < 0 || (order == 0 && upper.inclusive)
    }

    /// Orders lower ends by how much they admit, most first: none, then by value, an
    /// inclusive end before an exclusive one at the same value. The lower ends admitting
    /// a given value are then a prefix of any list sorted this way.
    static func compareLower(_ a: Bound?, _ b: Bound?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (a?, b?):
            let order = Value.compare(a.value, b.value)
            if order != 0 { return order }
            return a.inclusive == b.inclusive ? 0 : (a.inclusive ? -1 : 1)
        }
    }

    /// Orders upper ends by how much they admit, least first: by value, an exclusive end
    /// before an inclusive one at the same value, then none.
    static func compareUpper(_ a: Bound?, _ b: Bound?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return 1
        case (_, nil): return -1
        case let (a?, b?):
            let order = Value.compare(a.value, b.value)
            if order != 0 { return order }
            return a.inclusive == b.inclusive ? 0 : (a.inclusive ? 1 : -1)
        }
    }
}
