/// A ``RowPredicate`` made only of comparisons under `and`, `or` and `not`, each comparison
/// kept as its column, its operator and a class of its operand that the backend chooses
/// (``init(_:class:)``). For a compiler whose text for such a comparison depends on those and
/// not on the operand's value, the shape is a complete key for the compiled text: a backend
/// can compile a query once per shape and bind each query's operands. (PostgreSQL's and
/// SQLite's compilers do; see Backends.md.) Not generic over the class: a generic indirect
/// enum looked its metadata up in the runtime at every node of every query.
public indirect enum PredicateShape: Hashable, Sendable {
    case compare(String, ComparisonOperator, UInt8)
    case and([PredicateShape])
    case or([PredicateShape])
    case not(PredicateShape)

    /// The shape of `predicate`, `operandClass` called for each comparison in order (depth
    /// first, as a compiler writes them): nil when it returns nil for one, or the predicate
    /// holds anything else (a constant, `isIn`, `hasPrefix`, `contains`, an empty `and` or
    /// `or`), which a compiler may fold by value. Inlinable: a backend shapes every query it reads.
    @inlinable
    public init?(_ predicate: RowPredicate, class operandClass: (_ column: String, _ op: ComparisonOperator, _ operand: Value) -> UInt8?) {
        switch predicate {
        case let .compare(column, op, operand):
            guard let kept = operandClass(column, op, operand) else { return nil }
            self = .compare(column, op, kept)
        case let .and(parts):
            guard let shapes = Self.shapes(parts, operandClass) else { return nil }
            self = .and(shapes)
        case let .or(parts):
            guard let shapes = Self.shapes(parts, operandClass) else { return nil }
            self = .or(shapes)
        case let .not(inner):
            guard let shape = PredicateShape(inner, class: operandClass) else { return nil }
            self = .not(shape)
        case .constant, .isIn, .hasPrefix, .contains:
            return nil
        }
    }

    @inlinable
    static func shapes(_ parts: [RowPredicate], _ operandClass: (String, ComparisonOperator, Value) -> UInt8?) -> [PredicateShape]? {
        guard !parts.isEmpty else { return nil }
        var shapes: [PredicateShape] = []
        shapes.reserveCapacity(parts.count)
        for part in parts {
            guard let shape = PredicateShape(part, class: operandClass) else { return nil }
            shapes.append(shape)
        }
        return shapes
    }
}
