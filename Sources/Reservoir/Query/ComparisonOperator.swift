/// The comparison operators of ``RowPredicate/compare(column:_:_:)``.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    /// Equal in the value order; null-safe (null equals only null).
    case equal = "=="
    /// Not equal; null-safe, so it matches nulls when the operand is not null.
    case notEqual = "!="
    /// Before the operand in the value order; never matches null.
    case less = "<"
    /// Before or equal to the operand; never matches null.
    case lessOrEqual = "<="
    /// After the operand in the value order; never matches null.
    case greater = ">"
    /// After or equal to the operand; never matches null.
    case greaterOrEqual = ">="
}
