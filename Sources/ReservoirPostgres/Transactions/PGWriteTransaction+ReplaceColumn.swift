import Foundation
import Reservoir

/// A migration's new values for one column (a type change, an added field), in bulk: staged
/// with `COPY` into a temporary table as they come, a page at a time, then set by one
/// `UPDATE … FROM`, the column's type changed once, first, to the kind the new values share
/// (Backends.md § PostgreSQL, migrations).
extension PGWriteTransaction {
    /// The staging table, dropped at the end of the transaction (and with it on rollback).
    static let stageTable = "pg_temp._reservoir_stage"

    /// Stages every row's new value of `column` (its id, the value in the slot of its kind, and
    /// its mixed encoding in case the values turn out to be of several kinds), then gives the
    /// column the values' kind (`ALTER COLUMN … TYPE`, values cleared, when it had another; `ADD
    /// COLUMN` when it had none) and the values (`UPDATE … FROM` the stage). Falls back to a put
    /// per changed row for what it does not cover: a table whose ids are mixed, or a description
    /// other than the catalog's.
    func replaceColumn(_ column: String, in entity: EntityDescription, as target: EntityDescription,
                       pages: ((ColumnPage) throws -> Void) throws -> Void) throws {
        try begin()
        guard let stored = catalog.tables[entity.name], stored.entity == entity, target.name == entity.name,
              target.idColumn == entity.idColumn, column != entity.idColumn, stored.idKind != .mixed else {
            return try putChangedRows(in: entity, as: target, pages: pages)
        }
        var table = try prepareTable(target, firstID: .null)
        try schemaChanged()
        // Waits for readers (of every process) to finish; new ones wait for this commit.
        try connection.execute("SELECT pg_advisory_xact_lock(\(layout.rewriteKeys))")
        let idKind = table.idKind
        try connection.execute("""
            DROP TABLE IF EXISTS \(Self.stageTable);
            CREATE TEMP TABLE _reservoir_stage (id \(idKind.columnType), i bigint, r float8, t text, b bytea, m bytea) ON COMMIT DROP
            """)
        let copy = "COPY \(Self.stageTable) (id, i, r, t, b, m) FROM STDIN (FORMAT binary)"
        let idColumn = entity.idColumn
        var kinds = Set<ColumnKind>()
        try pages { page in
            for row in page.rows {
                let id = row.value(idColumn).stored
                guard let idField = ColumnCodec.parameter(id, kind: idKind, isID: true) else {
                    throw ReservoirError(.backend, "\(connection.name): the id column of \(entity.name) cannot hold \(id)")
                }
                let value = row.value(column).stored
                let kind = ColumnKind(of: value)
                if let kind { kinds.insert(kind) }
                _ = try connection.copyRow(copy, fieldCount: 6) { buffer in
                    idField.appendField(to: buffer)
                    for slot in Self.stageKinds {
                        let field = slot == kind ? ColumnCodec.parameter(value, kind: slot, isID: false) ?? .null : .null
                        field.appendField(to: buffer)
                    }
                    (kind == nil ? PGParameter.null : .bytes(ColumnCodec.mixed(value))).appendField(to: buffer)
                    return true
                }
            }
        }
        let existing = table.kinds[column]
        guard let newKind = kinds.count == 1 ? kinds.first : (kinds.isEmpty ? existing : .mixed) else {
            return  // no value, and no column to clear
        }
        let name = layout.table(entity.name)
        let quoted = Layout.quote(column)
        let source = "s.\(Self.stageSlot(newKind))"
        let join = "FROM \(Self.stageTable) AS s WHERE t.\(Layout.quote(idColumn)) = s.id"
        try connection.execute("ANALYZE \(Self.stageTable)")
        if existing == nil {
            try connection.execute("ALTER TABLE \(name) ADD COLUMN \(quoted) \(newKind.columnType)")
            try recordColumn(entity.name, column, position: table.columns.count, kind: newKind)
            table.columns.append(column)
            try connection.execute("UPDATE \(name) AS t SET \(quoted) = \(source) \(join) AND \(source) IS NOT NULL")
            if target.indexes.contains(column) { try createIndex(entity.name, column) }
        } else if existing == newKind {
            try connection.execute("UPDATE \(name) AS t SET \(quoted) = \(source) \(join) AND t.\(quoted) IS DISTINCT FROM \(source)")
        } else {
            // Every value is replaced: the type changes over nulls (the table rewritten once, an
            // index on the column rebuilt empty), then the values arrive.
            try connection.execute("ALTER TABLE \(name) ALTER COLUMN \(quoted) TYPE \(newKind.columnType) USING NULL::\(newKind.castType)")
            try connection.execute("UPDATE \(name) AS t SET \(quoted) = \(source) \(join) AND \(source) IS NOT NULL")
            try connection.run("UPDATE \(layout.columns) SET kind = $3::text WHERE entity = $1::text AND name = $2::text",
                               [.text(entity.name), .text(column), .text(newKind.rawValue)])
        }
        table.kinds[column] = newKind
        catalog.tables[entity.name] = table
        try connection.dropPrepared()
    }

    /// The kinds with a staging column of their own, in the staging table's order (after `id`).
    private static let stageKinds: [ColumnKind] = [.integer, .real, .text, .blob]

    /// The staging table's column holding values of `kind`.
    private static func stageSlot(_ kind: ColumnKind) -> String {
        switch kind {
        case .integer: "i"
        case .real: "r"
        case .text: "t"
        case .blob: "b"
        case .mixed: "m"
        }
    }
}
