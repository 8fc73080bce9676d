import Reservoir

/// The tables of a store at one catalog version (bumped by every schema change).
struct Catalog: Sendable {
    var version: Int64
    var tables: [String: TableInfo]

    /// Loads the catalog in the connection's current transaction.
    static func load(_ connection: PGConnection, layout: Layout, version: Int64) throws -> Catalog {
        var tables: [String: TableInfo] = [:]
        let entities = try connection.execute(
            "SELECT name, id_column, array_to_string(fields, ','), array_to_string(indexes, ','), integer_ids FROM \(layout.entities)")
        for row in 0..<entities.rowCount {
            guard let name = entities.text(row, 0), let idColumn = entities.text(row, 1) else { continue }
            let fields = (entities.text(row, 2) ?? "").split(separator: ",").map(String.init)
            let indexes = (entities.text(row, 3) ?? "").split(separator: ",").map(String.init)
            let description = EntityDescription(name: name, idColumn: idColumn, fields: fields, indexes: indexes,
                                                integerIDs: entities.text(row, 4) == "t")
            tables[name] = TableInfo(entity: description, columns: [], kinds: [:])
        }
        let columns = try connection.execute("SELECT entity, name, kind FROM \(layout.columns) ORDER BY entity, position")
        for row in 0..<columns.rowCount {
            guard let entity = columns.text(row, 0), let name = columns.text(row, 1),
                  let kind = columns.text(row, 2).flatMap(ColumnKind.init(rawValue:)) else { continue }
            tables[entity]?.columns.append(name)
            tables[entity]?.kinds[name] = kind
        }
        return Catalog(version: version, tables: tables)
    }
}
