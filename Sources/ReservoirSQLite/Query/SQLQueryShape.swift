import Reservoir

/// A query with its operands' values left out, for the queries whose SQL does not depend on
/// them: so the SQL ``SQLCompiler`` writes for one such query serves every query of the same
/// shape on the same catalog revision, and only the parameters are taken from each query.
///
/// Those are the queries whose every comparison is of a column the table has with an operand
/// that is not null, under `and`, `or` and `not` with at least one part each. The compiler
/// then folds nothing to a constant, and a comparison's SQL depends on its column, operator,
/// and whether the operand is text (a rowid id column is written `+id` against text), never
/// on the value: `(c IS ?n)`, `(c IS NOT ?n)`, `(c IS NOT NULL AND c < ?n)`. A null operand,
/// a missing column, `in` lists, prefixes, `contains` and constants are decided by values
/// or the catalog, and such a query is compiled each time. The window's presence is part of
/// the shape; its values are parameters.
struct SQLQueryShape: Hashable {
    let entity: String
    /// Each comparison's operand class: 1 for text, 0 for any other value.
    let condition: PredicateShape?
    let sort: [SortTerm]
    let windowed: Bool
    let counting: Bool

    /// The shape of `query` on `table`, with the parameters its SQL binds in the order of
    /// their placeholders (``SQLCompiler/compile(_:table:counting:)``'s); nil when the query
    /// is not of a value-free shape.
    static func of(_ query: Query, table: Catalog.Table, counting: Bool) -> (shape: SQLQueryShape, parameters: [CompiledQuery.Parameter])? {
        var parameters: [CompiledQuery.Parameter] = []
        var condition: PredicateShape?
        if let predicate = query.predicate {
            // The column set alone: a closure capturing the whole table copied it at every query.
            let columns = table.columnSet
            guard let shaped = PredicateShape(predicate, class: { column, _, operand -> UInt8? in
                guard !operand.isNull, columns.contains(column) else { return nil }
                parameters.append(.value(operand))
                return operand.isText ? 1 : 0
            }) else { return nil }
            condition = shaped
        }
        let windowed = query.limit != nil || query.offset > 0
        if windowed {
            parameters.append(.value(.integer(Int64(clamping: query.limit ?? -1))))
            parameters.append(.value(.integer(Int64(clamping: query.offset))))
        }
        let shape = SQLQueryShape(entity: query.entity.name, condition: condition, sort: query.sort, windowed: windowed, counting: counting)
        return (shape, parameters)
    }
}
