/// One page of a migration step's new values for one column, handed to
/// ``WriteTransaction/replaceColumn(_:in:as:pages:)``: every row of the page as the step left
/// it, in id order, and which of them the step changed.
public struct ColumnPage: Sendable {
    /// The rows after the step, every field included, in id order.
    public var rows: [Row]
    /// For each row of ``rows``, whether the step changed it.
    public var changed: [Bool]

    /// A page of `rows`, `changed[i]` telling whether the step changed `rows[i]`.
    public init(rows: [Row], changed: [Bool]) {
        precondition(rows.count == changed.count, "a ColumnPage needs one changed flag per row")
        self.rows = rows
        self.changed = changed
    }
}
