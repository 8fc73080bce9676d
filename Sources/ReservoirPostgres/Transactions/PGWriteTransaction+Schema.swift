import Foundation
import Reservoir

/// Schema changes inside a write: tables created, columns added, a column rewritten as mixed,
/// indexes made (Backends.md § PostgreSQL, layout).
extension PGWriteTransaction {
    func schemaChanged() throws {
        if !catalogChanged {
            let result = try connection.execute("UPDATE \(layout.meta) SET catalog = catalog + 1 RETURNING catalog")
            catalog.version = result.text(0, 0).flatMap { Int64($0) } ?? catalog.version + 1
            catalogChanged = true
        }
        try connection.dropPrepared()
        connection.preparedCatalog = catalog.version
    }

    /// The table for `entity`, created when missing; the stored description updated when
    /// the record type gained fields or indexes.
    func prepareTable(_ entity: EntityDescription, firstID: Value) throws -> TableInfo {
        if var table = catalog.tables[entity.name] {
            guard table.entity != entity else { return table }
            guard table.entity.idColumn == entity.idColumn else {
                throw ReservoirError(.invalidSchema, "\(connection.name): entity \(entity.name) is stored with id column \(table.entity.idColumn), not \(entity.idColumn)")
            }
            try schemaChanged()
            try connection.run(
                "UPDATE \(layout.entities) SET fields = string_to_array($2::text, ','), indexes = string_to_array($3::text, ','), integer_ids = $4::boolean WHERE name = $1::text",
                [.text(entity.name), .text(entity.fields.joined(separator: ",")), .text(entity.indexes.joined(separator: ",")), .bytes([entity.integerIDs ? 1 : 0])])
            for index in entity.indexes where !table.entity.indexes.contains(index) && table.kinds[index] != nil {
                try createIndex(entity.name, index)
            }
            table.entity = entity
            catalog.tables[entity.name] = table
            return table
        }
        let exists = try connection.execute("SELECT to_regclass(\(Layout.literal(layout.table(entity.name)))) IS NOT NULL")
        if exists.text(0, 0) == "t" {
            throw ReservoirError(.invalidSchema, "\(connection.name): a table named \(entity.name) exists in schema \(layout.schema) and was not made by Reservoir (it has no entry in _reservoir_entities); rename it, or open the store with ?schema=OTHER")
        }
        try schemaChanged()
        let idKind: ColumnKind = entity.integerIDs ? .integer : (ColumnKind(of: firstID) ?? .integer)
        try connection.execute("CREATE TABLE \(layout.table(entity.name)) (\(Layout.quote(entity.idColumn)) \(idKind.columnType) PRIMARY KEY)")
        try connection.run(
            "INSERT INTO \(layout.entities) (name, id_column, fields, indexes, integer_ids) VALUES ($1::text, $2::text, string_to_array($3::text, ','), string_to_array($4::text, ','), $5::boolean)",
            [.text(entity.name), .text(entity.idColumn), .text(entity.fields.joined(separator: ",")), .text(entity.indexes.joined(separator: ",")), .bytes([entity.integerIDs ? 1 : 0])])
        try recordColumn(entity.name, entity.idColumn, position: 0, kind: idKind)
        let table = TableInfo(entity: entity, columns: [entity.idColumn], kinds: [entity.idColumn: idKind])
        try connection.execute(layout.trigger(for: table))
        catalog.tables[entity.name] = table
        return table
    }

    /// Makes `column` able to hold `value`: adds it (with the value's kind), or rewrites it
    /// as mixed when it holds another kind.
    func prepareColumn(_ column: String, for value: Value, in table: TableInfo) throws -> TableInfo {
        guard let needed = ColumnKind(of: value) else { return table }
        guard let existing = table.kinds[column] else {
            var table = table
            try schemaChanged()
            try connection.execute("ALTER TABLE \(layout.table(table.entity.name)) ADD COLUMN \(Layout.quote(column)) \(needed.columnType)")
            try recordColumn(table.entity.name, column, position: table.columns.count, kind: needed)
            if table.entity.indexes.contains(column) { try createIndex(table.entity.name, column) }
            table.columns.append(column)
            table.kinds[column] = needed
            catalog.tables[table.entity.name] = table
            return table
        }
        // The exact kind, even for ids: an integer id stored in a real column would come
        // back as a real (-12 as -12.0), so a second kind of id makes the column mixed too.
        if existing == .mixed || ColumnCodec.parameter(value, kind: existing, isID: false) != nil { return table }
        return try makeMixed(column, in: table)
    }

    /// Rewrites `column` as mixed: its values re-encoded here (``KeyEncoding`` is Swift) into a
    /// new `bytea` column, read a page of ``mixedPage`` rows at a time in id order, so the client
    /// holds one page however large the table; then the column takes the new one's values in
    /// its place (`ALTER COLUMN … TYPE bytea USING`). Runs once per column, when a second kind
    /// first arrives (a migration's type change sends every row of its entity through here).
    func makeMixed(_ column: String, in table: TableInfo) throws -> TableInfo {
        try schemaChanged()
        // Waits for readers (of every process) to finish; new ones wait for this commit.
        try connection.execute("SELECT pg_advisory_xact_lock(\(layout.rewriteKeys))")
        var table = table
        let name = layout.table(table.entity.name)
        let idColumn = Layout.quote(table.entity.idColumn)
        let quoted = Layout.quote(column)
        let isID = column == table.entity.idColumn
        let oldKind = table.kinds[column] ?? .mixed
        let oldIDKind = table.idKind
        try connection.execute("ALTER TABLE \(name) ADD COLUMN _reservoir_new bytea")
        let select = "SELECT \(idColumn), \(quoted) FROM \(name) WHERE \(quoted) IS NOT NULL"
        let order = " ORDER BY \(idColumn) LIMIT \(Self.mixedPage)"
        let update = "UPDATE \(name) SET _reservoir_new = $2::bytea WHERE \(idColumn) = $1::\(oldIDKind.castType)"
        var after: PGParameter?
        repeat {
            let page = try after.map { try connection.run(select + " AND \(idColumn) > $1::\(oldIDKind.castType)" + order, [$0]) }
                ?? connection.run(select + order)
            after = nil
            for row in 0..<page.rowCount {
                guard let id = ColumnCodec.value(page.bytes(row, 0), kind: oldIDKind),
                      let idParameter = ColumnCodec.parameter(id, kind: oldIDKind, isID: true),
                      let value = ColumnCodec.value(page.bytes(row, 1), kind: oldKind) else {
                    throw ReservoirError(.corrupt, "\(connection.name): table \(table.entity.name), column \(column): a stored value does not decode")
                }
                // Queued: they go out in pipelines, not a round trip each.
                try connection.enqueue(update, [idParameter, .bytes(ColumnCodec.mixed(value))])
                if row == Self.mixedPage - 1 { after = idParameter }
            }
        } while after != nil
        try connection.execute("""
            ALTER TABLE \(name) ALTER COLUMN \(quoted) TYPE bytea USING _reservoir_new;
            ALTER TABLE \(name) DROP COLUMN _reservoir_new
            """)
        try connection.run("UPDATE \(layout.columns) SET kind = 'm' WHERE entity = $1::text AND name = $2::text",
                           [.text(table.entity.name), .text(column)])
        table.kinds[column] = .mixed
        if isID { try connection.execute(layout.trigger(for: table)) }
        catalog.tables[table.entity.name] = table
        try connection.dropPrepared()
        return table
    }

    /// Rows ``makeMixed(_:in:)`` reads at a time.
    static let mixedPage = 10_000

    func recordColumn(_ entity: String, _ column: String, position: Int, kind: ColumnKind) throws {
        try connection.run(
            "INSERT INTO \(layout.columns) (entity, name, position, kind) VALUES ($1::text, $2::text, $3::bigint, $4::text)",
            [.text(entity), .text(column), .integer(Int64(position)), .text(kind.rawValue)])
    }

    /// `NULLS FIRST`, the contract's order: the index then serves `ORDER BY column ASC NULLS
    /// FIRST` and, scanned backwards, `DESC NULLS LAST` (a default index, `NULLS LAST`, serves
    /// neither, so a sorted fetch with a limit sorted the whole table). Indexes made before stay
    /// as they were; they answer comparisons alike.
    func createIndex(_ entity: String, _ column: String) throws {
        try connection.execute("CREATE INDEX IF NOT EXISTS \(Self.indexName(entity, column)) ON \(layout.table(entity)) (\(Layout.quote(column)) NULLS FIRST)")
    }

    /// The index's name, quoted: `ENTITY_COLUMN_idx`, cut to PostgreSQL's 63 bytes.
    static func indexName(_ entity: String, _ column: String) -> String {
        Layout.quote(String("\(entity)_\(column)_idx".utf8.prefix(63)) ?? "\(entity)_idx")
    }
}

// MARK: - Migrations

extension PGWriteTransaction {
    /// `ALTER TABLE … DROP COLUMN` (its index goes with it) for each column the table has, the
    /// column list renumbered; transactional DDL, so it rolls back with the migration.
    func dropColumns(_ columns: [String], from entity: EntityDescription) throws {
        try begin()
        guard var table = catalog.tables[entity.name] else { return }
        let present = columns.filter { table.kinds[$0] != nil && $0 != table.entity.idColumn }
        guard !present.isEmpty else { return }
        try schemaChanged()
        let name = layout.table(entity.name)
        for column in present {
            try connection.execute("ALTER TABLE \(name) DROP COLUMN \(Layout.quote(column))")
            try connection.run("DELETE FROM \(layout.columns) WHERE entity = $1::text AND name = $2::text", [.text(entity.name), .text(column)])
            table.columns.removeAll { $0 == column }
            table.kinds[column] = nil
        }
        try connection.run("""
            UPDATE \(layout.columns) AS c SET position = r.n - 1
            FROM (SELECT name, row_number() OVER (ORDER BY position) AS n FROM \(layout.columns) WHERE entity = $1::text) AS r
            WHERE c.entity = $1::text AND c.name = r.name
            """, [.text(entity.name)])
        catalog.tables[entity.name] = table
        try connection.dropPrepared()
    }

    /// `ALTER TABLE … RENAME COLUMN` for each column (its index renamed with it, its row in
    /// `_reservoir_columns` too) and the description updated: values stay where they are;
    /// transactional DDL, so it rolls back with the migration. False, changing nothing, when a
    /// column is not in the table or a new name is taken.
    func renameColumns(_ renames: [(old: String, new: String)], in entity: EntityDescription,
                       to renamed: EntityDescription) throws -> Bool {
        try begin()
        guard var table = catalog.tables[entity.name], table.entity == entity,
              renamed.name == entity.name, renamed.idColumn == entity.idColumn else { return false }
        for (old, new) in renames {
            guard old != table.entity.idColumn, table.kinds[old] != nil, table.kinds[new] == nil else { return false }
        }
        try schemaChanged()
        let name = layout.table(entity.name)
        for (old, new) in renames {
            try connection.execute("ALTER TABLE \(name) RENAME COLUMN \(Layout.quote(old)) TO \(Layout.quote(new))")
            try connection.execute("ALTER INDEX IF EXISTS \(layout.quotedSchema).\(Self.indexName(entity.name, old)) RENAME TO \(Self.indexName(entity.name, new))")
            try connection.run("UPDATE \(layout.columns) SET name = $3::text WHERE entity = $1::text AND name = $2::text",
                               [.text(entity.name), .text(old), .text(new)])
            table.columns = table.columns.map { $0 == old ? new : $0 }
            table.kinds[new] = table.kinds[old]
            table.kinds[old] = nil
        }
        try connection.run(
            "UPDATE \(layout.entities) SET fields = string_to_array($2::text, ','), indexes = string_to_array($3::text, ',') WHERE name = $1::text",
            [.text(entity.name), .text(renamed.fields.joined(separator: ",")), .text(renamed.indexes.joined(separator: ","))])
        for index in renamed.indexes where !entity.indexes.contains(index) && !renames.contains(where: { $0.new == index }) && table.kinds[index] != nil {
            try createIndex(entity.name, index)
        }
        table.entity = renamed
        catalog.tables[entity.name] = table
        try connection.dropPrepared()
        return true
    }

    /// `DROP INDEX`: a write whose description leaves an index out keeps it (another app
    /// version may still declare it), a migration's dropIndex step does not.
    func dropIndex(on column: String, in entity: EntityDescription) throws {
        try begin()
        guard catalog.tables[entity.name] != nil else { return }
        try schemaChanged()
        try connection.execute("DROP INDEX IF EXISTS \(layout.quotedSchema).\(Self.indexName(entity.name, column))")
    }

    /// `DROP TABLE` (its indexes and trigger go with it), the trigger's function, and the
    /// entity's rows in the backend's own tables.
    func dropEntity(_ entity: EntityDescription) throws {
        try begin()
        guard catalog.tables[entity.name] != nil else { return }
        try schemaChanged()
        try connection.execute("DROP TABLE IF EXISTS \(layout.table(entity.name))")
        try connection.execute("DROP FUNCTION IF EXISTS \(layout.table("_reservoir_log_" + entity.name))()")
        try connection.run("DELETE FROM \(layout.columns) WHERE entity = $1::text", [.text(entity.name)])
        try connection.run("DELETE FROM \(layout.entities) WHERE name = $1::text", [.text(entity.name)])
        catalog.tables[entity.name] = nil
        try connection.dropPrepared()
    }
}
