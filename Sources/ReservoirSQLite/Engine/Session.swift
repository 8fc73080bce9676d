import Reservoir

/// One connection with its catalog: the unit the reader pool hands out, and the writer.
final class Session {
    let connection: Connection
    let catalog = Catalog()
    /// `SELECT * … WHERE id = ?1` per entity, the hottest statement.
    var rowStatements: [String: Statement] = [:]
    /// `INSERT … ON CONFLICT DO UPDATE` per entity and row shape (see `SQLiteWriteTransaction`).
    var upserts: [UpsertKey: Statement] = [:]
    /// The previous put's statement, and the entity description its table was prepared for.
    var lastUpsert: (key: UpsertKey, statement: Statement, description: EntityDescription)?

    struct UpsertKey: Hashable {
        var entity: String
        var columns: [String]
        var tableColumnCount: Int
    }

    private var cacheGeneration = 0

    init(connection: Connection) {
        self.connection = connection
    }

    /// The catalog, checked against the schema version once per transaction; statement
    /// caches built on tables that changed since are dropped.
    @inline(__always)
    func checkedCatalog() throws -> Catalog {
        try catalog.refreshIfNeeded(connection)
        if catalog.generation != cacheGeneration {
            rowStatements = [:]
            upserts = [:]
            lastUpsert = nil
            cacheGeneration = catalog.generation
        }
        return catalog
    }

    var path: String { connection.path }
}
