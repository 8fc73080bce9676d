/// A backend-neutral sort term: a column and a direction.
public struct SortTerm: Sendable, Hashable, CustomStringConvertible {
    /// The column sorted by.
    public var column: String
    /// Whether the column sorts ascending (nulls first) or descending (nulls last).
    public var ascending: Bool

    /// A term sorting by `column`, ascending unless told otherwise.
    public init(column: String, ascending: Bool = true) {
        self.column = column
        self.ascending = ascending
    }

    /// The term as SQL-like text: `column ASC` or `column DESC`.
    public var description: String { "\(column) \(ascending ? "ASC" : "DESC")" }
}
