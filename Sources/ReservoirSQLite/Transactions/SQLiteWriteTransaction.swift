import Foundation
import CSQLite
import Reservoir

/// The write transaction: an open `BEGIN IMMEDIATE` on the writer connection.
final class SQLiteWriteTransaction: SQLiteReadTransaction, WriteTransaction {
    /// The change log's newest change set when this transaction began (after pending
    /// plain-SQL rows were closed); nothing else writes the log until it commits.
    let head: ChangeLog.Head
    /// The log's head as this transaction leaves it: `head`, or the change set it recorded.
    private(set) var logHead: ChangeLog.Head

    init(session: Session, head: ChangeLog.Head) {
        self.head = head
        self.logHead = head
        super.init(session: session)
    }

    /// The sequence `record(_:)` gave, which `lastSequence()` reports from then on.
    private var recordedSequence: UInt64?

    override func lastSequence() throws -> UInt64 {
        try checkOpen()
        return recordedSequence ?? head.sequence
    }

    override func lastCommit() throws -> CommitPosition {
        try checkOpen()
        return CommitPosition(sequence: logHead.sequence, commit: logHead.commit)
    }

    func put(_ entity: EntityDescription, id: Value, row: Row) throws {
        try checkOpen()
        try write(entity, id: id, row: row, mode: .upsert).run()
    }

    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        try checkOpen()
        let statement = try write(entity, id: id, row: row, mode: .insert)
        do {
            try statement.run()
            return true
        } catch let error as ReservoirError
            where error.nativeCode == SQLiteCode.primaryKeyConstraint || error.nativeCode == SQLiteCode.rowidConstraint {
            // ON CONFLICT ABORT undid this statement alone; the transaction goes on.
            return false
        }
    }

    /// The statement that writes `row` under `id`, bound and ready to run.
    private func write(_ entity: EntityDescription, id: Value, row: Row, mode: Session.WriteMode) throws -> Statement {
        guard !id.isNull else {
            throw ReservoirError(.invalidSchema, "\(sqliteStore(session.path)): cannot store a row of entity \"\(entity.name)\" with a null id")
        }
        let catalog = try session.checkedCatalog()
        let last: Session.LastWrite
        if let cached = session.lastWrite, cached.fits(entity, columns: row.columns, mode: mode, revision: catalog.revision) {
            // The same entity, row shape and mode as the previous write: the table is ready.
            last = cached
            last.statement.reset()
        } else {
            let table = try prepareTable(entity, for: row)
            let key = Session.WriteKey(mode: mode, entity: table.entity.name, columns: row.columns, tableColumnCount: table.columns.count)
            let statement = try session.writes[key] ?? makeWrite(table, row: row, mode: mode)
            statement.reset()
            session.writes[key] = statement
            last = Session.LastWrite(key: key, statement: statement, revision: session.catalog.revision, description: entity,
                                     integerKey: table.integerKey)
            session.lastWrite = last
        }
        if last.integerKey && !id.isInteger {
            // SQLite would convert text "1" to 1 and refuse anything else with SQLITE_MISMATCH.
            throw ReservoirError(.invalidSchema, "\(sqliteStore(session.path)): cannot store a row of entity \"\(entity.name)\" with id \(id) (\(id.kindName)): the entity stores integer ids (its table's id column \"\(entity.idColumn)\" is INTEGER PRIMARY KEY)")
        }
        try last.statement.bindRow(id: id, row, skipping: last.idPosition)
        return last.statement
    }

    func delete(_ entity: EntityDescription, id: Value) throws {
        try checkOpen()
        guard !id.isNull, let table = try table(entity.name), !(table.integerKey && id.isText) else { return }
        let statement = try connection.cached("DELETE FROM \(SQL.identifier(entity.name)) WHERE \(SQL.identifier(table.entity.idColumn)) = ?1")
        try statement.bind(id, at: 1)
        try statement.run()
    }

    func record(_ changeSet: ChangeSet) throws {
        try checkOpen()
        if let recorded = try ChangeLog.record(changeSet, connection) {
            logHead = recorded
        }
        recordedSequence = changeSet.sequence
    }

    // MARK: - Migrations

    /// `ALTER TABLE … DROP COLUMN` for each column the table has (after dropping its index), so
    /// plain-SQL clients see the columns gone; rolled back with the transaction.
    func dropColumns(_ columns: [String], from entity: EntityDescription) throws {
        try checkOpen()
        guard var table = try table(entity.name) else { return }
        var changed = false
        for column in columns where table.columnSet.contains(column) && column != table.entity.idColumn {
            try Metadata.dropIndex(column, on: entity.name, connection)
            try Metadata.dropColumn(column, from: entity.name, connection)
            table.removeColumn(column)
            changed = true
        }
        guard changed else { return }
        session.catalog.update(table)
        forgetStatements()
    }

    /// `ALTER TABLE … RENAME COLUMN` for each column, values left where they are, and the
    /// description saved; an index on a renamed column is made again under its new name (index
    /// names carry the column). False, changing nothing, when a column is not in the table or a
    /// new name is taken (SQLite compares column names ignoring case).
    func renameColumns(_ renames: [(old: String, new: String)], in entity: EntityDescription,
                       to renamed: EntityDescription) throws -> Bool {
        try checkOpen()
        guard var table = try table(entity.name), table.entity == entity,
              renamed.name == entity.name, renamed.idColumn == entity.idColumn else { return false }
        for (old, new) in renames {
            guard old != table.entity.idColumn, table.columnSet.contains(old), !table.foldedColumns.contains(SQL.fold(new)) else { return false }
            try SQL.checkName(new, kind: "column", entity: entity.name, path: session.path)
        }
        for (old, new) in renames {
            if entity.indexes.contains(old) { try Metadata.dropIndex(old, on: entity.name, connection) }
            try Metadata.renameColumn(old, to: new, in: entity.name, connection)
            table.renameColumn(old, to: new)
        }
        for column in renamed.indexes where !entity.indexes.contains(column) {
            try Metadata.createIndex(column, on: entity.name, connection)
        }
        for column in entity.indexes where !renamed.indexes.contains(column) && !renames.contains(where: { $0.old == column }) {
            try Metadata.dropIndex(column, on: entity.name, connection)
        }
        try Metadata.saveEntity(renamed, connection)
        table.entity = renamed
        session.catalog.update(table)
        forgetStatements()
        return true
    }

    /// `DROP TABLE` (its indexes and triggers go with it) and the stored description.
    func dropEntity(_ entity: EntityDescription) throws {
        try checkOpen()
        guard try table(entity.name) != nil else { return }
        try Metadata.dropTable(entity.name, connection)
        session.catalog.remove(entity.name)
        forgetStatements()
    }

    /// A type change's or added field's values by `UPDATE … SET column = ?2 WHERE id = ?1` per
    /// changed row, one column bound instead of the whole row a put's upsert binds and writes;
    /// the first row goes through ``put(_:id:row:)`` under `target`, which adds the column and the
    /// description's indexes as any write does.
    func replaceColumn(_ column: String, in entity: EntityDescription, as target: EntityDescription,
                       pages: ((ColumnPage) throws -> Void) throws -> Void) throws {
        try checkOpen()
        guard let table = try table(entity.name), table.entity == entity, target.name == entity.name,
              target.idColumn == entity.idColumn, column != entity.idColumn else {
            return try putChangedRows(in: entity, as: target, pages: pages)
        }
        let idColumn = entity.idColumn
        var update: Statement?
        var described = target == entity
        try pages { page in
            for (row, changed) in zip(page.rows, page.changed) where changed || !described {
                let id = row.value(idColumn)
                if let update {
                    try update.bind(id, at: 1)
                    try update.bind(row.value(column), at: 2)
                    try update.run()
                } else {
                    try put(target, id: id, row: row)
                    described = true
                    update = try connection.cached("UPDATE \(SQL.identifier(entity.name)) SET \(SQL.identifier(column)) = ?2 WHERE \(SQL.identifier(idColumn)) = ?1")
                }
            }
        }
    }

    /// One `UPDATE` of the column to `_reservoir_convert(id, column)`, an application-defined
    /// function calling `convert` (registered on this connection for the statement only): SQLite
    /// walks the table once, rewriting each row in place, as the same migration written in SQL
    /// would, where ``replaceColumn(_:in:as:pages:)`` reads the rows out a page at a time and
    /// seeks each one again to update it. An error `convert` throws aborts the statement (SQLite
    /// undoes its changes) and is thrown here.
    func convertColumn(_ column: String, in entity: EntityDescription,
                       _ convert: (_ id: Value, _ value: Value) throws -> Value,
                       converted: (Int) -> Void) throws -> Bool {
        try checkOpen()
        guard let table = try table(entity.name), table.entity == entity, column != entity.idColumn,
              table.columnSet.contains(column) else { return false }
        return try withoutActuallyEscaping(convert) { convert in
            try withoutActuallyEscaping(converted) { converted in
                let conversion = ColumnConversion(convert: convert, converted: converted, path: session.path)
                let database = connection.handle
                let name = ColumnConversion.functionName
                let registered = sqlite3_create_function_v2(
                    database, name, 2, SQLITE_UTF8, Unmanaged.passUnretained(conversion).toOpaque(),
                    { context, _, arguments in ColumnConversion.call(context, arguments) }, nil, nil, nil)
                guard registered == SQLITE_OK else { return false }
                defer { sqlite3_create_function_v2(database, name, 2, SQLITE_UTF8, nil, nil, nil, nil, nil) }
                let target = SQL.identifier(column)
                do {
                    try connection.execute("UPDATE \(SQL.identifier(entity.name)) SET \(target) = \(name)(\(SQL.identifier(entity.idColumn)), \(target))")
                } catch {
                    throw conversion.failure ?? error
                }
                return true
            }
        }
    }

    /// Drops cached statements, which may name columns or tables no longer there.
    private func forgetStatements() {
        session.forgetRowStatements()
        session.writes = [:]
        session.lastWrite = nil
    }

    func trimChangeLog(through sequence: UInt64) throws {
        try checkOpen()
        try ChangeLog.trim(through: Int64(clamping: sequence), connection)
    }

    func setMetadata(_ key: String, to value: Data?) throws {
        try checkOpen()
        try Metadata.set(key, to: value, connection)
    }

    // MARK: - Schema on demand

    /// The entity's table, created or extended (columns, indexes, description) so it can hold `row`.
    private func prepareTable(_ entity: EntityDescription, for row: Row) throws -> Catalog.Table {
        if var table = try table(entity.name) {
            if table.entity.idColumn != entity.idColumn {
                throw ReservoirError(.invalidSchema, "\(sqliteStore(session.path)): entity \"\(entity.name)\" is stored with id column \"\(table.entity.idColumn)\", not \"\(entity.idColumn)\"; the id column cannot change")
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
                session.catalog.update(table)
            }
            return table
        }
        try SQL.checkName(entity.name, kind: "entity", entity: entity.name, path: session.path)
        let folded = SQL.fold(entity.name)
        if let other = session.catalog.tables.keys.first(where: { SQL.fold($0) == folded }) {
            throw ReservoirError(.invalidSchema, "\(sqliteStore(session.path)): entity \"\(entity.name)\" differs only in letter case from entity \"\(other)\"; SQLite table names ignore case")
        }
        var columns = [entity.idColumn]
        var foldedColumns: Set<String> = [SQL.fold(entity.idColumn)]
        for column in entity.fields + row.columns where !columns.contains(column) {
            try SQL.checkName(column, kind: "column", entity: entity.name, path: session.path)
            guard foldedColumns.insert(SQL.fold(column)).inserted else { throw caseClash(column, entity: entity.name, columns: columns) }
            columns.append(column)
        }
        try Metadata.createTable(entity, columns: columns, connection)
        for column in entity.indexes {
            try Metadata.createIndex(column, on: entity.name, connection)
        }
        try Metadata.saveEntity(entity, connection)
        let table = Catalog.Table(entity: entity, columns: columns, integerKey: entity.integerIDs)
        session.catalog.update(table)
        return table
    }

    private func addColumn(_ column: String, to table: inout Catalog.Table) throws {
        try SQL.checkName(column, kind: "column", entity: table.entity.name, path: session.path)
        guard !table.foldedColumns.contains(SQL.fold(column)) else {
            throw caseClash(column, entity: table.entity.name, columns: table.columns)
        }
        try Metadata.addColumn(column, to: table.entity.name, connection)
        table.addColumn(column)
    }

    private func caseClash(_ column: String, entity: String, columns: [String]) -> ReservoirError {
        ReservoirError(.invalidSchema, "\(sqliteStore(session.path)): column \"\(column)\" of entity \"\(entity)\" differs only in letter case from an existing column (\(columns.joined(separator: ", "))); SQLite column names ignore case")
    }

    /// The `INSERT` (refusing an existing id) or `INSERT … ON CONFLICT DO UPDATE` for this
    /// row's columns: parameter 1 is the id, then the row's other columns in order; table
    /// columns the row lacks become NULL.
    private func makeWrite(_ table: Catalog.Table, row: Row, mode: Session.WriteMode) throws -> Statement {
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
        sql += ") VALUES(\(values))"
        if mode == .upsert {
            for column in table.columns where !written.contains(column) {
                updates.append("\(SQL.identifier(column)) = NULL")
            }
            if updates.isEmpty { updates.append("\(SQL.identifier(idColumn)) = excluded.\(SQL.identifier(idColumn))") }
            sql += " ON CONFLICT(\(SQL.identifier(idColumn))) DO UPDATE SET " + updates.joined(separator: ", ")
        }
        return try connection.cached(sql)
    }
}

/// The state of one ``SQLiteWriteTransaction/convertColumn(_:in:_:converted:)``: the conversion
/// its SQL function calls, how many rows it converted, and the first error.
private final class ColumnConversion {
    static let functionName = "_reservoir_convert"
    /// Rows between two reports to `converted`.
    static let reportInterval = 1000

    let convert: (Value, Value) throws -> Value
    let converted: (Int) -> Void
    let path: String
    var count = 0
    var failure: Error?

    init(convert: @escaping (Value, Value) throws -> Value, converted: @escaping (Int) -> Void, path: String) {
        self.convert = convert
        self.converted = converted
        self.path = path
    }

    /// The SQL function's body: `arguments` are the row's id and the column's value.
    static func call(_ context: OpaquePointer?, _ arguments: UnsafeMutablePointer<OpaquePointer?>?) {
        guard let context, let arguments, let state = sqlite3_user_data(context) else { return }
        let conversion = Unmanaged<ColumnConversion>.fromOpaque(state).takeUnretainedValue()
        do {
            let result = try conversion.convert(value(arguments[0]), value(arguments[1]))
            try conversion.setResult(result, in: context)
        } catch {
            if conversion.failure == nil { conversion.failure = error }
            sqlite3_result_error(context, "a migration's conversion failed", -1)
            return
        }
        conversion.count += 1
        if conversion.count % reportInterval == 0 { conversion.converted(conversion.count) }
    }

    /// A function argument as a ``Value``.
    private static func value(_ argument: OpaquePointer?) -> Value {
        switch sqlite3_value_type(argument) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_value_int64(argument))
        case SQLITE_FLOAT:
            return .real(sqlite3_value_double(argument))
        case SQLITE_TEXT:
            let count = Int(sqlite3_value_bytes(argument))
            guard let text = sqlite3_value_text(argument), count > 0 else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(argument))
            guard let bytes = sqlite3_value_blob(argument), count > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default:
            return .null
        }
    }

    private func setResult(_ value: Value, in context: OpaquePointer) throws {
        switch value {
        case .null:
            sqlite3_result_null(context)
        case let .integer(integer):
            sqlite3_result_int64(context, integer)
        case let .real(real):
            sqlite3_result_double(context, real)
        case let .text(text):
            var text = text
            try text.withUTF8 { utf8 in
                let count = try length(utf8.count)
                guard let base = utf8.baseAddress, count > 0 else { return reservoir_sqlite3_result_text_transient(context, "", 0) }
                base.withMemoryRebound(to: CChar.self, capacity: utf8.count) { reservoir_sqlite3_result_text_transient(context, $0, count) }
            }
        case let .blob(data):
            try data.withUnsafeBytes { bytes in
                let count = try length(bytes.count)
                guard let base = bytes.baseAddress, count > 0 else { return sqlite3_result_zeroblob(context, 0) }
                reservoir_sqlite3_result_blob_transient(context, base, count)
            }
        }
    }

    private func length(_ count: Int) throws -> Int32 {
        guard let length = Int32(exactly: count) else {
            throw ReservoirError(.valueOutOfRange, "\(sqliteStore(path)): a value of \(count) bytes is larger than SQLite's limit of 2 GiB")
        }
        return length
    }
}
