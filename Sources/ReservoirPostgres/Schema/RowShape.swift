/// The columns rows are returned with (the entity's fields, then other table columns),
/// each with its position in ``TableInfo/selectList`` (nil when the table has no such
/// column: it reads as null) and its kind.
struct RowShape: Sendable {
    let columns: [String]
    let positions: [Int?]
    let kinds: [ColumnKind]
}
