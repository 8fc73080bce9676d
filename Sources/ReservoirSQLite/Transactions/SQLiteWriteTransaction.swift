import Reservoir

/// The write transaction: an open `BEGIN IMMEDIATE` on the writer connection.
final class SQLiteWriteTransaction: SQLiteReadTransaction, WriteTransaction {
    /// The newest change-log row before this transaction wrote anything.
    let startChange: Int64
    let retention: Int
    private(set) var recorded = false
    /// Whether this transaction changed the schema (so a rollback must reset the catalog).
    private(set) var changedSchema = false

    init(session: Session, startChange: Int64, retention: Int) {
        self.startChange = startChange
        self.retention = retention
        super.init(session: session)
    }

    func put(_ entity: EntityDescription, id: Value, row: Row) throws {
        guard !id.isNull else {
            throw ReservoirError(.invalidSchema, "SQLite store \"\(session.path)\": cannot store a row of entity \"\(entity.name)\" with a null id")
        }
        let statement: Statement
        let catalog = try session.checkedCatalog()
        if let last = session.lastUpsert, last.key.entity == entity.name, last.key.columns == row.columns,
           last.description == entity, catalog.tables[entity.name]?.columns.count == last.key.tableColumnCount {
            // The same entity and row shape as the previous put: the table is ready.
            statement = last.statement
            statement.reset()
        } else {
            let table = try prepareTable(entity, for: row)
            statement = try upsert(table, row: row)
            session.lastUpsert?.description = entity
        }
        try statement.bind(id, at: 1)
        var index: Int32 = 2
        for (column, value) in zip(row.columns, row.values) where column != entity.idColumn {
            try statement.bind(value, at: index)
            index += 1
        }
        try statement.run()
    }

    func delete(_ entity: EntityDescription, id: Value) throws {
        guard !id.isNull, let table = try table(entity.name) else { return }
        let statement = try connection.cached("DELETE FROM \(SQL.identifier(entity.name)) WHERE \(SQL.identifier(table.entity.idColumn)) = ?1")
        try statement.bind(id, at: 1)
        try statement.run()
    }

    func record(_ changeSet: ChangeSet) throws {
        try ChangeLog.record(changeSet, after: startChange, retention: retention, connection)
        recorded = true
    }

    // MARK: - Schema on demand

    /// The entity's table, created or extended (columns, indexes, description) so it can hold `row`.
    private func prepareTable(_ entity: EntityDescription, for row: Row) throws -> Catalog.Table {
        if var table = try table(entity.name) {
            if table.entity.idColumn != entity.idColumn {
                throw ReservoirError(.invalidSchema, "SQLite store \"\(session.path)\": entity \"\(entity.name)\" is stored with id column \"\(table.entity.idColumn)\", not \"\(entity.idColumn)\"; the id column cannot change")
            }
            var changed = false
            for column in row.columns where !table.columnSet.contains(column) {
                try addColumn(column, to: &table)
                changed = true
            }
            if table.entity != entity {
                for column in entity.fields where !table.columnSet.contains(column) {
                    try addColumn(column, to: &table)
                }
                for column in table.entity.indexes where !entity.indexes.contains(column) {
                    try Metadata.dropIndex(column, on: entity.name, connection)
                }
                for column in entity.indexes where !table.entity.indexes.contains(column) {
                    try Metadata.createIndex(column, on: entity.name, connection)
                }
                try Metadata.saveEntity(entity, connection)
                table.entity = entity
                changed = true
            }
            if changed {
                changedSchema = true
                session.catalog.update(table)
            }
            return table
        }
        try SQL.checkName(entity.name, kind: "entity", entity: entity.name, path: session.path)
        let folded = SQL.fold(entity.name)
        if let other = session.catalog.tables.keys.first(where: { SQL.fold($0) == folded }) {
            throw ReservoirError(.invalidSchema, "SQLite store \"\(session.path)\": entity \"\(entity.name)\" differs only in letter case from entity \"\(other)\"; SQLite table names ignore case")
        }
        var columns = [entity.idColumn]
        var foldedColumns: Set<String> = [SQL.fold(entity.idColumn)]
        for column in entity.fields + row.columns where !columns.contains(column) {
            try SQL.checkName(column, kind: "column", entity: entity.name, path: session.path)
            guard foldedColumns.insert(SQL.fold(column)).inserted else { throw caseClash(column, entity: entity.name, columns: columns) }
            columns.append(column)
        }
        changedSchema = true
        try Metadata.createTable(entity, columns: columns, connection)
        for column in entity.indexes {
            try Metadata.createIndex(column, on: entity.name, connection)
        }
        try Metadata.saveEntity(entity, connection)
        let table = Catalog.Table(entity: entity, columns: columns)
        session.catalog.update(table)
        return table
    }

    private func addColumn(_ column: String, to table: inout Catalog.Table) throws {
        try SQL.checkName(column, kind: "column", entity: table.entity.name, path: session.path)
        guard !table.foldedColumns.contains(SQL.fold(column)) else {
            throw caseClash(column, entity: table.entity.name, columns: table.columns)
        }
        changedSchema = true
        try Metadata.addColumn(column, to: table.entity.name, connection)
        table.addColumn(column)
    }

    private func caseClash(_ column: String, entity: String, columns: [String]) -> ReservoirError {
        ReservoirError(.invalidSchema, "SQLite store \"\(session.path)\": column \"\(column)\" of entity \"\(entity)\" differs only in letter case from an existing column (\(columns.joined(separator: ", "))); SQLite column names ignore case")
    }

    /// The cached `INSERT … ON CONFLICT DO UPDATE` for this row's columns: parameter 1 is
    /// the id, then the row's other columns in order; table columns the row lacks become NULL.
    private func upsert(_ table: Catalog.Table, row: Row) throws -> Statement {
        let key = Session.UpsertKey(entity: table.entity.name, columns: row.columns, tableColumnCount: table.columns.count)
        let statement = try session.upserts[key] ?? makeUpsert(table, row: row)
        statement.reset()
        session.upserts[key] = statement
        session.lastUpsert = (key, statement, table.entity)
        return statement
    }

    private func makeUpsert(_ table: Catalog.Table, row: Row) throws -> Statement {
        let idColumn = table.entity.idColumn
        var sql = "INSERT INTO \(SQL.identifier(table.entity.name))(\(SQL.identifier(idColumn))"
        var values = "?1"
        var updates: [String] = []
        var index = 2
        var written: Set<String> = [idColumn]
        for column in row.columns where column != idColumn {
            let quoted = SQL.identifier(column)
            sql += ", " + quoted
            values += ", ?\(index)"
            updates.append("\(quoted) = excluded.\(quoted)")
            written.insert(column)
            index += 1
        }
        for column in table.columns where !written.contains(column) {
            updates.append("\(SQL.identifier(column)) = NULL")
        }
        if updates.isEmpty { updates.append("\(SQL.identifier(idColumn)) = excluded.\(SQL.identifier(idColumn))") }
        sql += ") VALUES(\(values)) ON CONFLICT(\(SQL.identifier(idColumn))) DO UPDATE SET " + updates.joined(separator: ", ")
        return try connection.cached(sql)
    }
}
