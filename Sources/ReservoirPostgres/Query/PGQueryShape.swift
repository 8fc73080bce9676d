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
    /// Each comparison's operand class: the column's kind, which the operand's equals.
    let condition: PredicateShape?
    let sort: [SortTerm]
    let limited: Bool
    let offset: Bool
    let counting: Bool

    /// The shape of `query` on `table`, with the parameters its SQL takes in the order of
    /// their placeholders (``PGCompiler/compile(_:table:layout:counting:)``'s); nil when the
    /// query is not of a value-free shape.
    static func of(_ query: Query, table: TableInfo, counting: Bool) -> (shape: PGQueryShape, parameters: [PGParameter])? {
        var parameters: [PGParameter] = []
        var condition: PredicateShape?
        if let predicate = query.predicate {
            // The kinds alone: a closure capturing the whole table copied it at every query.
            let kinds = table.kinds
            guard let shaped = PredicateShape(predicate, class: { column, _, operand -> UInt8? in
                guard let kind = kinds[column], kind != .mixed, ColumnKind(of: operand) == kind,
                      let parameter = ColumnCodec.parameter(operand, kind: kind, isID: false) else { return nil }
                parameters.append(parameter)
                return kind.shapeClass
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

extension ColumnKind {
    /// The kind as a ``PredicateShape`` operand class.
    var shapeClass: UInt8 {
        switch self {
        case .integer: 1
        case .real: 2
        case .text: 3
        case .blob: 4
        case .mixed: 5
        }
    }
}
