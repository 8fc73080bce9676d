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
    /// A comparison: its column, operator and the column's kind (the operand's, too).
    struct Comparison: Hashable, Sendable {
        let column: String
        let op: ComparisonOperator
        let kind: ColumnKind
    }

    let condition: PredicateShape<Comparison>?
    let sort: [SortTerm]
    let limited: Bool
    let offset: Bool
    let counting: Bool

    /// The shape of `query` on `table`, with the parameters its SQL takes in the order of
    /// their placeholders (``PGCompiler/compile(_:table:layout:counting:)``'s); nil when the
    /// query is not of a value-free shape.
    static func of(_ query: Query, table: TableInfo, counting: Bool) -> (shape: PGQueryShape, parameters: [PGParameter])? {
        var parameters: [PGParameter] = []
        var condition: PredicateShape<Comparison>?
        if let predicate = query.predicate {
            guard let shaped = PredicateShape(predicate, leaf: { column, op, operand -> Comparison? in
                guard let kind = table.kinds[column], kind != .mixed, ColumnKind(of: operand) == kind,
                      let parameter = ColumnCodec.parameter(operand, kind: kind, isID: false) else { return nil }
                parameters.append(parameter)
                return Comparison(column: column, op: op, kind: kind)
            }) else { return nil }
            condition = shaped
        }
        if let limit = query.limit { parameters.append(.integer(Int64(clamping: limit))) }
        if query.offset > 0 { parameters.append(.integer(Int64(clamping: query.offset))) }
        let shape = PGQueryShape(condition: condition, sort: query.sort, limited: query.limit != nil,
                                 offset: query.offset > 0, counting: counting)
        return (shape, parameters)
    }
}
