import Foundation
import Reservoir

/// What one connection knows of the entity tables: their columns, as of a schema version.
///
/// Each connection keeps its own catalog and reloads it when `PRAGMA schema_version`
/// moves (a table or column added by this or any other connection or process).
final class Catalog {
    /// One entity table as it is on disk.
    struct Table {
        var entity: EntityDescription
        /// The table's columns, in table order (the order `SELECT *` returns).
        var columns: [String]
        var columnSet: Set<String>
        /// Lower-cased column names: SQLite identifiers ignore ASCII case.
        var foldedColumns: Set<String>
        /// Whether the id column is the rowid (`INTEGER PRIMARY KEY`), as the table is on
        /// disk, whatever the description says: it holds integers only, and SQLite applies
        /// integer affinity to what is stored in it or compared with it.
        let integerKey: Bool

        init(entity: EntityDescription, columns: [String], integerKey: Bool) {
            self.entity = entity
            self.integerKey = integerKey
            self.columns = columns
            self.columnSet = Set(columns)
            self.foldedColumns = Set(columns.map(SQL.fold))
        }

        mutating func addColumn(_ column: String) {
            columns.append(column)
            columnSet.insert(column)
            foldedColumns.insert(SQL.fold(column))
        }

        mutating func removeColumn(_ column: String) {
            columns.removeAll { $0 == column }
            columnSet.remove(column)
            foldedColumns.remove(SQL.fold(column))
        }

        mutating func renameColumn(_ column: String, to newName: String) {
            columns = columns.map { $0 == column ? newName : $0 }
            columnSet.remove(column)
            columnSet.insert(newName)
            foldedColumns.remove(SQL.fold(column))
            foldedColumns.insert(SQL.fold(newName))
        }
    }

    private(set) var tables: [String: Table] = [:]
    /// Tables another application made, by case-folded name: an entity may not take one's
    /// name (reading it would show nothing, creating it would fail).
    private(set) var foreignTables: [String: String] = [:]
    /// Counts reloads from disk, so statement caches built on older tables can be dropped.
    private(set) var generation = 0
    /// Counts every change to `tables` (reloads, own DDL, invalidation): a write statement
    /// prepared at the same revision still matches its table.
    private(set) var revision = 0
    /// The schema version the tables were loaded at; -1 forces a reload.
    private var version: Int64 = -1
    /// Whether the current transaction has checked the version already.
    private var checkedInTransaction = false
    /// Whether `tables` was known to match the disk when this connection's last transaction
    /// ended: that transaction checked the schema version (or was entitled to skip the
    /// check), recorded its own DDL, and nothing invalidated the catalog since. Only then
    /// may the next transaction skip its check. A transaction that never looked at the
    /// catalog (an empty write) proves nothing about it: trusting a catalog on the strength
    /// of such a write once let a rolled-back write's emptied catalog, a never-loaded one
    /// after reopening, or one older than another store's commit pass for current.
    private var currentAtLastTransactionEnd = false

    /// Forgets everything, for after a rollback of this connection's own DDL.
    func invalidate() {
        version = -1
        foreignTables = [:]
        checkedInTransaction = false
        currentAtLastTransactionEnd = false
        tables = [:]
        revision += 1
    }

    /// Call when a transaction ends, so the next one checks the schema version again.
    func endTransaction() {
        currentAtLastTransactionEnd = checkedInTransaction
        checkedInTransaction = false
    }

    /// Skips this transaction's schema-version check: for a connection that knows nothing
    /// has committed since its own last transaction, whose DDL it recorded with ``update(_:)``,
    /// when that transaction left the catalog current.
    func trustForThisTransaction() {
        checkedInTransaction = currentAtLastTransactionEnd
    }

    /// Reloads when the schema version moved; checks at most once per transaction.
    func refreshIfNeeded(_ connection: Connection) throws {
        guard !checkedInTransaction else { return }
        // A held statement: every read transaction runs it, and the statement cache's lookup
        // (hashing the SQL) cost a sixth of the check.
        let statement = try connection.statement(.schemaVersion)
        defer { statement.reset() }
        let current = try statement.step() ? statement.value(at: 0).integerValue : 0
        checkedInTransaction = true
        guard current != version else { return }
        try reload(connection)
        version = current
    }

    /// Records a table this connection just created or changed, inside its transaction.
    /// The version is reset so the next transaction reloads from disk.
    func update(_ table: Table) {
        tables[table.entity.name] = table
        version = -1
        revision += 1
    }

    /// Forgets a table this connection just dropped, inside its transaction.
    func remove(_ entity: String) {
        tables[entity] = nil
        version = -1
        revision += 1
    }

    private func reload(_ connection: Connection) throws {
        var loaded: [String: Table] = [:]
        let entities = try Metadata.entities(connection)
        for entity in entities {
            let columns = try Metadata.columns(of: entity.name, connection)
            guard !columns.isEmpty else { continue }  // the table was dropped by hand
            let integerKey = try Metadata.hasIntegerKey(entity.name, idColumn: entity.idColumn, connection)
            loaded[entity.name] = Table(entity: entity, columns: columns, integerKey: integerKey)
        }
        tables = loaded
        foreignTables = try Metadata.foreignTables(connection, entities: entities)
        generation += 1
        revision += 1
    }
}

extension Value {
    /// The integer payload, or 0 for anything else.
    var integerValue: Int64 {
        switch self {
        case let .integer(value): value
        case let .real(value): Int64(exactly: value.rounded(.towardZero)) ?? 0
        default: 0
        }
    }

    var isInteger: Bool {
        if case .integer = self { return true }
        return false
    }

    var isText: Bool {
        if case .text = self { return true }
        return false
    }
}
