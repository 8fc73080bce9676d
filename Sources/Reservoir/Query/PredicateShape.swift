/// A ``RowPredicate`` made only of comparisons under `and`, `or` and `not`, with each
/// comparison replaced by what a backend keeps of it (``init(_:leaf:)``): for a compiler
/// whose text for such a comparison depends on the column, the operator and some class of
/// the operand but not its value, the shape with those classes is a complete key for the
/// compiled text, and a backend can compile a query once per shape and bind each query's
/// operands. (PostgreSQL's and SQLite's compilers do; see Backends.md.)
public indirect enum PredicateShape<Leaf: Hashable & Sendable>: Hashable, Sendable {
    case leaf(Leaf)
    case and([PredicateShape])
    case or([PredicateShape])
    case not(PredicateShape)

    /// The shape of `predicate`, `leaf` called for each comparison in order (depth first, as
    /// a compiler writes them): nil when `leaf` returns nil for one, or the predicate holds
    /// anything else (a constant, `isIn`, `hasPrefix`, `contains`, an empty `and` or `or`),
    /// which a compiler may fold by value.
    public init?(_ predicate: RowPredicate, leaf: (_ column: String, _ op: ComparisonOperator, _ operand: Value) -> Leaf?) {
        switch predicate {
        case let .compare(column, op, operand):
            guard let kept = leaf(column, op, operand) else { return nil }
            self = .leaf(kept)
        case let .and(parts):
            guard let shapes = Self.shapes(parts, leaf) else { return nil }
            self = .and(shapes)
        case let .or(parts):
            guard let shapes = Self.shapes(parts, leaf) else { return nil }
            self = .or(shapes)
        case let .not(inner):
            guard let shape = PredicateShape(inner, leaf: leaf) else { return nil }
            self = .not(shape)
        case .constant, .isIn, .hasPrefix, .contains:
            return nil
        }
    }

    private static func shapes(_ parts: [RowPredicate], _ leaf: (String, ComparisonOperator, Value) -> Leaf?) -> [PredicateShape]? {
        guard !parts.isEmpty else { return nil }
        var shapes: [PredicateShape] = []
        shapes.reserveCapacity(parts.count)
        for part in parts {
            guard let shape = PredicateShape(part, leaf: leaf) else { return nil }
            shapes.append(shape)
        }
        return shapes
    }
}
