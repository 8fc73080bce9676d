/// A record's id and its row after the change.
public struct RowChange: Sendable, Equatable {
    /// The record's id.
    public let id: Value
    /// The record's row after the change.
    public let row: Row

    /// A record's id with its new row.
    public init(id: Value, row: Row) {
        self.id = id
        self.row = row
    }
}
