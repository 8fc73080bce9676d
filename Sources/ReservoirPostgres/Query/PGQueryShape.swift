import Reservoir

/// A query with its operands' values left out, for the queries whose SQL does not depend on
/// them: so the SQL ``PGCompiler`` spells for one such query serves every query of the same
/// shape on the same tables, and only the parameters are taken from each query.
///
/// Those are the queries whose every comparison compares a column with an operand of that
/// column's own kind (an integer with a `bigint` column, a real that is not NaN with a
/// `double precision` one, text without NUL with a `text` one, a blob with a `bytea` one),
/// under `and`, `or` and `not` with at least one part each. The compiler decides nothing from
/// such an operand's value: it never folds the comparison to a constant, and writes it as
/// `(c IS NOT NULL AND c op $n::type)` or `(c IS NULL OR c <> $n::type)`. Every other
/// condition (a null, a mixed column, another kind, a prefix, a `contains`, an `in` list, a
/// constant) is decided by values, and such a query is compiled each time. The window's
/// presence is part of the shape; its values are parameters.
struct PGQueryShape: Hashable {
    indirect enum Condition: Hashable {
        case compare(String, ComparisonOperator, ColumnKind)
        case and([Condition])
        case or([Condition])
        case not(Condition)
    }

    let condition: Condition?
    let sort: [SortTerm]
    let limited: Bool
    let offset: Bool
    let counting: Bool

    /// The shape of `query` on `table`, with the parameters its SQL takes in the order of
    /// their placeholders (``PGCompiler/compile(_:table:layout:counting:)``'s); nil when the
    /// query is not of a value-free shape.
    static func of(_ query: Query, table: TableInfo, counting: Bool) -> (shape: PGQueryShape, parameters: [PGParameter])? {
        var parameters: [PGParameter] = []
        var condition: Condition?
        if let predicate = query.predicate {
            guard let shaped = shape(predicate, table, &parameters) else { return nil }
            condition = shaped
        }
        if let limit = query.limit { parameters.append(.integer(Int64(clamping: limit))) }
        if query.offset > 0 { parameters.append(.integer(Int64(clamping: query.offset))) }
        let shape = PGQueryShape(condition: condition, sort: query.sort, limited: query.limit != nil,
                                 offset: query.offset > 0, counting: counting)
        return (shape, parameters)
    }

    private static func shape(_ predicate: RowPredicate, _ table: TableInfo, _ parameters: inout [PGParameter]) -> Condition? {
        switch predicate {
        case let .compare(column, op, operand):
            guard let kind = table.kinds[column], kind != .mixed, ColumnKind(of: operand) == kind,
                  let parameter = ColumnCodec.parameter(operand, kind: kind, isID: false) else { return nil }
            parameters.append(parameter)
            return .compare(column, op, kind)
        case let .and(parts):
            return shapes(parts, table, &parameters).map { .and($0) }
        case let .or(parts):
            return shapes(parts, table, &parameters).map { .or($0) }
        case let .not(inner):
            return shape(inner, table, &parameters).map { .not($0) }
        case .constant, .isIn, .hasPrefix, .contains:
            return nil
        }
    }

    private static func shapes(_ parts: [RowPredicate], _ table: TableInfo, _ parameters: inout [PGParameter]) -> [Condition]? {
        guard !parts.isEmpty else { return nil }
        var shaped: [Condition] = []
        shaped.reserveCapacity(parts.count)
        for part in parts {
            guard let condition = shape(part, table, &parameters) else { return nil }
            shaped.append(condition)
        }
        return shaped
    }
}
