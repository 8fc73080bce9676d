import Reservoir

/// One record type's table as the catalog describes it.
struct TableInfo: Sendable {
    var entity: EntityDescription { didSet { refresh() } }
    /// Columns in table order, the id first.
    var columns: [String] { didSet { refresh() } }
    var kinds: [String: ColumnKind] { didSet { refresh() } }
    /// How result rows become ``Row``s, kept with the table so a fetch of 100,000 rows or a
    /// run of point reads works it out once, not per row.
    private(set) var rowShape = RowShape(columns: [], fields: [])
    /// `"id", "a", "b"`: the select list, in table order.
    private(set) var selectList = ""
    /// Each column's kind, in table order (for rows streamed into a `COPY`).
    private(set) var columnKinds: [ColumnKind] = []

    init(entity: EntityDescription, columns: [String], kinds: [String: ColumnKind]) {
        self.entity = entity
        self.columns = columns
        self.kinds = kinds
        refresh()
    }

    /// The id column's kind (worked out with the rest, not looked up at every row).
    private(set) var idKind: ColumnKind = .mixed

    private mutating func refresh() {
        var names = entity.fields
        for column in columns where !entity.fields.contains(column) { names.append(column) }
        rowShape = RowShape(columns: names, fields: names.map { name in
            RowShape.Field(position: columns.firstIndex(of: name).map { Int32($0) } ?? -1, kind: kinds[name] ?? .mixed)
        })
        selectList = columns.map(Layout.quote).joined(separator: ", ")
        columnKinds = columns.map { kinds[$0] ?? .mixed }
        idKind = kinds[entity.idColumn] ?? .mixed
    }
}
