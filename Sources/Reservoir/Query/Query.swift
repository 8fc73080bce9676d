/// A backend-neutral query: what a backend's read transaction answers.
public struct Query: Sendable, Hashable, CustomStringConvertible {
    /// The entity whose rows are queried.
    public var entity: EntityDescription
    /// nil matches every row. NaN operands are stored as null, as stored values are (see ``Value/stored``).
    public var predicate: RowPredicate? {
        didSet { predicate = predicate?.storedOperands }
    }
    /// The complete sort: always ends with the id, so the order is total.
    public private(set) var sort: [SortTerm]
    /// At most this many rows; nil for all.
    public var limit: Int?
    /// Rows of the sorted result to skip first.
    public var offset: Int

    /// A query; `sort` gets the id-ascending tie-break appended (terms after an id term are dropped).
    /// Throws `.invalidQuery` for a negative limit or offset.
    public init(entity: EntityDescription, predicate: RowPredicate? = nil, sort: [SortTerm] = [], limit: Int? = nil, offset: Int = 0) throws {
        if let limit, limit < 0 {
            throw ReservoirError(.invalidQuery, "limit \(limit) is negative; expected nil or a count of 0 or more")
        }
        if offset < 0 {
            throw ReservoirError(.invalidQuery, "offset \(offset) is negative; expected 0 or more")
        }
        self.entity = entity
        self.predicate = predicate?.storedOperands
        self.limit = limit
        self.offset = offset
        var terms: [SortTerm] = []
        for term in sort {
            terms.append(term)
            if term.column == entity.idColumn { break }
        }
        if terms.last?.column != entity.idColumn {
            terms.append(SortTerm(column: entity.idColumn, ascending: true))
        }
        self.sort = terms
    }

    /// The query as SQL-like text, for messages and logs.
    public var description: String {
        var text = "FROM \(entity.name)"
        if let predicate { text += " WHERE \(predicate)" }
        text += " ORDER BY " + sort.map(\.description).joined(separator: ", ")
        if let limit { text += " LIMIT \(limit)" }
        if offset > 0 { text += " OFFSET \(offset)" }
        return text
    }
}
