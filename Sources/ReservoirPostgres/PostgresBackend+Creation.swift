import Foundation
import Reservoir

/// A store is created by its first write, in that write's transaction (Backends.md §
/// PostgreSQL, transactions): a write refused (another application's table named like a record
/// type, no permission) rolls the new tables back with it and leaves the schema as it was.
extension PostgresBackend {
    /// Checks the format of the store's tables, when they exist; creating them is left to the
    /// first write (``createIfNeeded(_:)``), so that a refused write leaves nothing behind.
    func setUp(_ connection: PGConnection) throws {
        let exists = try connection.execute("SELECT to_regclass(\(Layout.literal(layout.meta))) IS NOT NULL")
        guard exists.text(0, 0) == "t" else { return }
        let format = try connection.execute("SELECT format FROM \(layout.meta)").text(0, 0).flatMap { Int($0) } ?? 0
        guard format <= Layout.formatVersion else {
            throw ReservoirError(.corrupt, "\(server.name): the store was written in format \(format) by a newer Reservoir; this version reads format \(Layout.formatVersion)")
        }
        if format < Layout.formatVersion { try upgrade(connection) }
        created.withLock { $0 = true }
    }

    /// Brings a format 1 store to format 2 in one transaction (one process at a time): the
    /// commit-identity columns, and every entity table's trigger replaced by one that fills
    /// them (see ``Layout``). Needs the rights that created the tables.
    private func upgrade(_ connection: PGConnection) throws {
        do {
            try connection.execute("BEGIN; SELECT \(layout.setUpLock)")
            let meta = try connection.execute("SELECT format, catalog FROM \(layout.meta) FOR UPDATE")
            let format = meta.text(0, 0).flatMap { Int($0) } ?? 0
            if format < Layout.formatVersion {
                try connection.execute("""
                    ALTER TABLE \(layout.meta) ADD COLUMN IF NOT EXISTS commit_id bigint;
                    ALTER TABLE \(layout.meta) ADD COLUMN IF NOT EXISTS store_id uuid NOT NULL DEFAULT gen_random_uuid();
                    ALTER TABLE \(layout.changes) ADD COLUMN IF NOT EXISTS commit_id bigint
                    """)
                let catalog = try Catalog.load(connection, layout: layout, version: meta.text(0, 1).flatMap { Int64($0) } ?? 0)
                for table in catalog.tables.values.sorted(by: { $0.entity.name < $1.entity.name }) {
                    try connection.execute(layout.trigger(for: table))
                }
                try connection.execute("UPDATE \(layout.meta) SET format = \(Layout.formatVersion)")
            }
            try connection.execute("COMMIT")
        } catch let error as ReservoirError {
            if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
            throw ReservoirError(error.code, "\(server.name): could not upgrade the store from format 1 to \(Layout.formatVersion) (commit identities): \(error.message)")
        }
    }

    /// In a write transaction just begun: creates the schema and the store's tables when they
    /// do not exist yet (one process at a time: an advisory lock held to the transaction's end).
    func createIfNeeded(_ connection: PGConnection) throws {
        guard !created.withLock({ $0 }) else { return }
        try connection.execute("SELECT \(layout.setUpLock)")
        // Read from pg_class with this statement's snapshot, after the lock: to_regclass goes
        // through the session's catalog cache, which may still remember the table as missing
        // (this connection asked at open) although another process has since created it.
        let exists = try connection.execute("""
            SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                           WHERE n.nspname = \(Layout.literal(layout.schema)) AND c.relname = '_reservoir_meta')
            """)
        if exists.text(0, 0) != "t" {
            try connection.execute(layout.createSchema + "; " + layout.createTables)
        }
    }

    /// Whether the store's tables exist, asked in `connection`'s transaction while not known.
    func tablesExist(_ connection: PGConnection) throws -> Bool {
        if created.withLock({ $0 }) { return true }
        let exists = try connection.execute("SELECT to_regclass(\(Layout.literal(layout.meta))) IS NOT NULL").text(0, 0) == "t"
        if exists { created.withLock { $0 = true } }
        return exists
    }

    /// The writer's `BEGIN`, creating the store's tables in the transaction when they do not
    /// exist yet, then the meta row `FOR UPDATE` (the write lock) and the transaction's id.
    func beginCreating(_ connection: PGConnection) throws -> (CommitPosition, Catalog, UUID?) {
        guard !created.withLock({ $0 }) else {
            return try begin(connection, "BEGIN", lock: " FOR UPDATE")
        }
        do {
            try connection.execute("BEGIN")
            try createIfNeeded(connection)
        } catch let error as ReservoirError {
            if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
        return try begin(connection, "SELECT 1", lock: " FOR UPDATE")
    }
}
