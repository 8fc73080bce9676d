/// The columns rows are returned with (the entity's fields, then other table columns), and
/// for each where ``TableInfo/selectList`` has it and its kind.
struct RowShape: Sendable {
    /// Where one of ``columns`` comes from in a result row.
    struct Field: Sendable {
        /// Its position in the select list; -1 when the table has no such column (it reads as null).
        let position: Int32
        let kind: ColumnKind
    }

    let columns: [String]
    /// One for each of ``columns``, in the same order: the decoding loop reads both from one
    /// array, not a position's optional and a kind from two.
    let fields: [Field]
}
