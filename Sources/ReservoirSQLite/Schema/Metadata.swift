import Foundation
import Reservoir

/// The backend's own tables and the DDL of entity tables.
///
/// Layout (see Backends.md § SQLite):
/// - one table per entity, named after it, the id column its primary key, one column per
///   top-level field, every column declared *without a type* so SQLite keeps each value
///   exactly as bound (no affinity conversions); `WITHOUT ROWID`, except for entities whose
///   ids are all integers, whose table is a rowid table with `id INTEGER PRIMARY KEY`;
/// - `_reservoir_meta(key, value)`: the format version (`format_version`) and the store's identity
///   (`store_id`, a UUID made when the store is created, or when an older file is first opened);
/// - `_reservoir_entities(name, id_column, fields, indexes, integer_ids)`: entity descriptions;
/// - `_reservoir_changes(change, entity, id, kind, ids, sequence, commit_id)`: the change log,
///   filled by this library's writer and by triggers for other clients; `sequence` and the
///   commit's identity (``CommitPosition``) are set on the last row of each change set (see
///   ``ChangeLog``).
enum Metadata {
    /// The on-disk format this code writes; a higher one in a file is refused.
    /// Version 2 added the change log's `ids` column (packed id lists), which version 1
    /// readers would skip; a version 1 file is upgraded in place on open. It also added
    /// `_reservoir_entities.integer_ids`, which older readers ignore, and later the change
    /// log's `commit_id` column, which they ignore too (their commits have no identity then).
    static let formatVersion: Int64 = 2

    /// Creates the backend's tables when missing and checks the format version.
    /// Call inside a write transaction.
    static func setUp(_ connection: Connection) throws {
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS _reservoir_meta(key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS _reservoir_entities(
                name TEXT PRIMARY KEY NOT NULL, id_column TEXT NOT NULL, fields TEXT NOT NULL, indexes TEXT NOT NULL,
                integer_ids INTEGER NOT NULL DEFAULT 0
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS _reservoir_changes(
                change INTEGER PRIMARY KEY, entity TEXT NOT NULL, id, kind TEXT NOT NULL, sequence INTEGER, ids BLOB,
                commit_id INTEGER
            );
            CREATE INDEX IF NOT EXISTS _reservoir_changes_sequence ON _reservoir_changes(sequence) WHERE sequence IS NOT NULL;
            INSERT OR IGNORE INTO _reservoir_meta(key, value) VALUES('format_version', \(formatVersion));
            """, action: "create the backend's tables")
        try connection.run("INSERT OR IGNORE INTO _reservoir_meta(key, value) VALUES('store_id', ?1)",
                           [.text(UUID().uuidString.lowercased())])
        try checkFormat(connection)
        if try !columns(of: "_reservoir_entities", connection).contains("integer_ids") {
            // Version 1 files, and version 2 files written before the column was added.
            try connection.execute(
                "ALTER TABLE _reservoir_entities ADD COLUMN integer_ids INTEGER NOT NULL DEFAULT 0",
                action: "add the integer_ids column to the entity descriptions"
            )
        }
        if try !columns(of: "_reservoir_changes", connection).contains("commit_id") {
            // Files written before commits had identities: their change sets' identity is unknown (0).
            try connection.execute(
                "ALTER TABLE _reservoir_changes ADD COLUMN commit_id INTEGER",
                action: "add the commit_id column to the change log"
            )
        }
        if try storedFormat(connection) < formatVersion {
            if try !columns(of: "_reservoir_changes", connection).contains("ids") {
                try connection.execute("ALTER TABLE _reservoir_changes ADD COLUMN ids BLOB", action: "upgrade the change log to format \(formatVersion)")
            }
            try connection.run("UPDATE _reservoir_meta SET value = ?1 WHERE key = 'format_version'", [.integer(formatVersion)])
        }
    }

    /// The format version the file records.
    static func storedFormat(_ connection: Connection) throws -> Int64 {
        try connection.scalar("SELECT value FROM _reservoir_meta WHERE key = 'format_version'").integerValue
    }

    /// Whether every table (and column) of the backend exists already.
    static func isSetUp(_ connection: Connection) throws -> Bool {
        let count = try connection.scalar("""
            SELECT count(*) FROM sqlite_master WHERE type = 'table'
            AND name IN ('_reservoir_meta', '_reservoir_entities', '_reservoir_changes')
            """)
        guard count.integerValue == 3 else { return false }
        return try columns(of: "_reservoir_entities", connection).contains("integer_ids")
            && columns(of: "_reservoir_changes", connection).contains("commit_id")
            && storeIdentity(connection) != nil
    }

    /// The store's identity, nil in a file written before stores had one.
    static func storeIdentity(_ connection: Connection) throws -> UUID? {
        guard case let .text(text) = try connection.scalar("SELECT value FROM _reservoir_meta WHERE key = 'store_id'") else { return nil }
        return UUID(uuidString: text)
    }

    /// The bytes kept under metadata `key` (``ReadTransaction/metadata(_:)``), in
    /// `_reservoir_meta` beside the format version and the store's identity.
    static func value(_ key: String, _ connection: Connection) throws -> Data? {
        guard case let .blob(bytes) = try connection.scalar("SELECT value FROM _reservoir_meta WHERE key = ?1", [.text(key)]) else { return nil }
        return bytes
    }

    /// Keeps `value` under metadata `key`, or removes the key when it is nil.
    static func set(_ key: String, to value: Data?, _ connection: Connection) throws {
        if let value {
            try connection.run("INSERT OR REPLACE INTO _reservoir_meta(key, value) VALUES(?1, ?2)", [.text(key), .blob(value)])
        } else {
            try connection.run("DELETE FROM _reservoir_meta WHERE key = ?1", [.text(key)])
        }
    }

    /// Throws `.corrupt` when the file was written in a newer format than this code reads.
    static func checkFormat(_ connection: Connection) throws {
        let stored = try connection.scalar("SELECT value FROM _reservoir_meta WHERE key = 'format_version'")
        guard case let .integer(version) = stored, version <= formatVersion else {
            throw ReservoirError(.corrupt, "\(sqliteStore(connection.path)): the file's Reservoir format version is \(stored), this library reads version \(formatVersion) or older; open it with a newer version of Reservoir")
        }
    }

    // MARK: - Entities

    /// Every entity description stored in `_reservoir_entities`, by name.
    static func entities(_ connection: Connection) throws -> [EntityDescription] {
        let statement = try connection.cached("SELECT name, id_column, fields, indexes, integer_ids FROM _reservoir_entities ORDER BY name")
        defer { statement.reset() }
        var result: [EntityDescription] = []
        while try statement.step() {
            guard case let .text(name) = statement.value(at: 0), case let .text(idColumn) = statement.value(at: 1) else { continue }
            result.append(EntityDescription(
                name: name, idColumn: idColumn,
                fields: decodeList(statement.value(at: 2)),
                indexes: decodeList(statement.value(at: 3)),
                integerIDs: statement.value(at: 4).integerValue != 0
            ))
        }
        return result
    }

    /// Every table in the database not made by this library (neither an entity's table nor
    /// one of its own `_reservoir_` tables), by SQLite's case-folded name.
    static func foreignTables(_ connection: Connection, entities: [EntityDescription]) throws -> [String: String] {
        let statement = try connection.cached("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
        defer { statement.reset() }
        let ours = Set(entities.map { SQL.fold($0.name) })
        var result: [String: String] = [:]
        while try statement.step() {
            guard case let .text(name) = statement.value(at: 0), !name.hasPrefix("_reservoir_") else { continue }
            let folded = SQL.fold(name)
            if !ours.contains(folded) { result[folded] = name }
        }
        return result
    }

    /// The columns of table `name` in table order; empty when there is no such table.
    static func columns(of table: String, _ connection: Connection) throws -> [String] {
        let statement = try connection.cached("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
        defer { statement.reset() }
        try statement.bind(.text(table), at: 1)
        var columns: [String] = []
        while try statement.step() {
            if case let .text(name) = statement.value(at: 0) { columns.append(name) }
        }
        return columns
    }

    /// Whether table `name`'s column `idColumn` is its rowid (`INTEGER PRIMARY KEY` in a rowid
    /// table): then SQLite converts what is stored there to integers, or refuses it.
    ///
    /// A `WITHOUT ROWID` table lists its primary key among its indexes (origin `pk`), and
    /// so does a rowid table whose primary key is not a rowid alias; an alias has none.
    static func hasIntegerKey(_ table: String, idColumn: String, _ connection: Connection) throws -> Bool {
        let statement = try connection.cached("""
            SELECT (SELECT count(*) FROM pragma_table_info(?1) WHERE pk > 0) = 1
                AND EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE pk = 1 AND name = ?2 COLLATE NOCASE AND upper(type) = 'INTEGER')
                AND NOT EXISTS (SELECT 1 FROM pragma_index_list(?1) WHERE origin = 'pk')
            """)
        defer { statement.reset() }
        try statement.bind(.text(table), at: 1)
        try statement.bind(.text(idColumn), at: 2)
        guard try statement.step() else { return false }
        return statement.value(at: 0).integerValue != 0
    }

    static func saveEntity(_ entity: EntityDescription, _ connection: Connection) throws {
        try connection.run(
            "INSERT OR REPLACE INTO _reservoir_entities(name, id_column, fields, indexes, integer_ids) VALUES(?1, ?2, ?3, ?4, ?5)",
            [.text(entity.name), .text(entity.idColumn), .text(encodeList(entity.fields)), .text(encodeList(entity.indexes)),
             .integer(entity.integerIDs ? 1 : 0)]
        )
    }

    // MARK: - Entity tables

    /// Creates the table and its change-log triggers.
    ///
    /// Integer ids make a rowid table with the id as `INTEGER PRIMARY KEY` (the rowid
    /// itself: no separate key b-tree, the fastest layout SQLite has); other ids a
    /// `WITHOUT ROWID` table keyed by the untyped id column.
    static func createTable(_ entity: EntityDescription, columns: [String], _ connection: Connection) throws {
        let table = SQL.identifier(entity.name)
        let id = SQL.identifier(entity.idColumn)
        let others = columns.filter { $0 != entity.idColumn }.map { ", " + SQL.identifier($0) }.joined()
        // No declared types but the rowid's: values are stored exactly as bound.
        var ddl = entity.integerIDs
            ? "CREATE TABLE \(table)(\(id) INTEGER PRIMARY KEY NOT NULL\(others));\n"
            : "CREATE TABLE \(table)(\(id) PRIMARY KEY NOT NULL\(others)) WITHOUT ROWID;\n"
        ddl += triggers(entity)
        try connection.execute(ddl, action: "create the table for entity \"\(entity.name)\"")
    }

    /// The triggers that log every insert, update and delete on an entity table, by any
    /// SQLite client, into `_reservoir_changes` (sequence numbers are assigned later).
    ///
    /// `existed` marks an INSERT that found the row already there (INSERT OR REPLACE,
    /// or an UPSERT turning into an update), so the reader nets it into an update.
    static func triggers(_ entity: EntityDescription) -> String {
        let table = SQL.identifier(entity.name)
        let id = SQL.identifier(entity.idColumn)
        let name = SQL.literal(entity.name)
        func trigger(_ suffix: String) -> String { SQL.identifier(SQL.reservedPrefix + "log_" + entity.name + "_" + suffix) }
        func log(_ row: String, _ kind: String) -> String {
            "INSERT INTO _reservoir_changes(entity, id, kind) VALUES(\(name), \(row).\(id), '\(kind)');"
        }
        return """
            CREATE TRIGGER \(trigger("existed")) BEFORE INSERT ON \(table)
                WHEN EXISTS (SELECT 1 FROM \(table) WHERE \(id) = NEW.\(id)) BEGIN \(log("NEW", "existed")) END;
            CREATE TRIGGER \(trigger("inserted")) AFTER INSERT ON \(table) BEGIN \(log("NEW", "inserted")) END;
            CREATE TRIGGER \(trigger("updated")) AFTER UPDATE ON \(table)
                WHEN OLD.\(id) IS NEW.\(id) BEGIN \(log("NEW", "updated")) END;
            CREATE TRIGGER \(trigger("rekeyed")) AFTER UPDATE ON \(table)
                WHEN OLD.\(id) IS NOT NEW.\(id) BEGIN \(log("OLD", "deleted")) \(log("NEW", "inserted")) END;
            CREATE TRIGGER \(trigger("deleted")) AFTER DELETE ON \(table) BEGIN \(log("OLD", "deleted")) END;

            """
    }

    static func addColumn(_ column: String, to entity: String, _ connection: Connection) throws {
        try connection.execute(
            "ALTER TABLE \(SQL.identifier(entity)) ADD COLUMN \(SQL.identifier(column))",
            action: "add column \"\(column)\" to the table of entity \"\(entity)\""
        )
    }

    /// Drops a column (SQLite 3.35 and later); its index must be dropped first.
    static func dropColumn(_ column: String, from entity: String, _ connection: Connection) throws {
        try connection.execute(
            "ALTER TABLE \(SQL.identifier(entity)) DROP COLUMN \(SQL.identifier(column))",
            action: "drop column \"\(column)\" from the table of entity \"\(entity)\""
        )
    }

    /// Renames a column in place (SQLite 3.25 and later): values, indexes and triggers follow it.
    static func renameColumn(_ column: String, to newName: String, in entity: String, _ connection: Connection) throws {
        try connection.execute(
            "ALTER TABLE \(SQL.identifier(entity)) RENAME COLUMN \(SQL.identifier(column)) TO \(SQL.identifier(newName))",
            action: "rename column \"\(column)\" of the table of entity \"\(entity)\" to \"\(newName)\""
        )
    }

    /// Drops an entity's table (with its indexes and change-log triggers) and its description.
    static func dropTable(_ entity: String, _ connection: Connection) throws {
        try connection.execute("DROP TABLE IF EXISTS \(SQL.identifier(entity))", action: "drop the table of entity \"\(entity)\"")
        try connection.run("DELETE FROM _reservoir_entities WHERE name = ?1", [.text(entity)])
    }

    static func indexName(_ entity: String, _ column: String) -> String {
        SQL.reservedPrefix + "index_" + entity + "_" + column
    }

    static func createIndex(_ column: String, on entity: String, _ connection: Connection) throws {
        try connection.execute(
            "CREATE INDEX IF NOT EXISTS \(SQL.identifier(indexName(entity, column))) ON \(SQL.identifier(entity))(\(SQL.identifier(column)))",
            action: "create the index on \"\(column)\" of entity \"\(entity)\""
        )
    }

    static func dropIndex(_ column: String, on entity: String, _ connection: Connection) throws {
        try connection.execute(
            "DROP INDEX IF EXISTS \(SQL.identifier(indexName(entity, column)))",
            action: "drop the index on \"\(column)\" of entity \"\(entity)\""
        )
    }

    // MARK: - Lists

    private static func encodeList(_ names: [String]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: names), let text = String(data: data, encoding: .utf8) else {
            return "[]"
        }
        return text
    }

    private static func decodeList(_ value: Value) -> [String] {
        guard case let .text(text) = value,
              let names = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String]
        else { return [] }
        return names
    }
}
