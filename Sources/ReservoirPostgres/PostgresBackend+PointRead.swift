import Foundation
import Reservoir

/// `Store.get`'s point read in one round trip. A read transaction sends the readers' shared
/// lock, `BEGIN` with the meta row, its `SELECT`, and `COMMIT` with the unlock, each waiting for
/// the one before: four round trips where the statement alone is one. A point read knows all of
/// them up front, so they go in one pipeline, in three segments (``PGPipelineItem/sync``):
///
/// 1. the shared lock, as a segment of its own, so it is held before the next segment's first
///    statement takes the snapshot (as ``PostgresBackend/read(_:)`` takes it);
/// 2. `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`, the meta row, the row's `SELECT`;
/// 3. `COMMIT` and the unlock, which run even when the second segment failed (`COMMIT` then
///    rolls back), so the connection comes back idle and unlocked.
///
/// The `SELECT` is built from the catalog the store last loaded. It is answered from here only
/// when everything succeeded and the meta row names that same catalog; otherwise (a schema
/// changed by another client, a store not created yet, a table the catalog lacks, an error)
/// the read runs again the ordinary way, which loads the catalog and reports errors as always.
extension PostgresBackend {
    public func row(_ entity: String, id: Value) throws -> Row? {
        try checkOpen()
        if created.withLock({ $0 }), let catalog = cachedCatalog.withLock({ $0 }),
           let (sql, parameters, table) = PGReadTransaction.rowStatement(entity, id: id, in: catalog, layout: layout) {
            let connection = try acquireReader()
            var healthy = connection.isHealthy
            defer { releaseReader(connection, healthy: healthy) }
            // A connection whose prepared statements belong to another catalog (or none: a new
            // one) reads the ordinary way once, which brings them in line.
            if connection.preparedCatalog == catalog.version {
                let answer = try connection.pipeline([
                    .plain(layout.readLock), .sync,
                    .plain(Layout.readBegin), .plain(layout.readMeta), .prepared(sql, parameters), .sync,
                    .plain("COMMIT"), .plain(layout.readUnlock),
                ])
                healthy = connection.isHealthy
                if answer.succeeded, let meta = answer.results[2], let result = answer.results[3],
                   meta.text(0, 1).flatMap({ Int64($0) }) == catalog.version {
                    learnt(meta.text(0, 3).flatMap(UUID.init(uuidString:)))
                    return try PGReadTransaction.decodeFirst(result, table, connection: connection)
                }
                // The call has used its time: no second try.
                if let lost = answer.lost, lost.code == .timeout { throw lost }
            }
        }
        return try read { try $0.row(entity, id: id) }
    }
}
