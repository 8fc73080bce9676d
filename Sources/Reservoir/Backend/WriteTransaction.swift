import Foundation

/// The write transaction: a ``ReadTransaction`` that also sees its own writes.
public protocol WriteTransaction: ReadTransaction {
    /// Stores `row` under `id`, inserting or replacing. Creates the entity's storage
    /// (table, named database, indexes, new columns) on first use.
    func put(_ entity: EntityDescription, id: Value, row: Row) throws

    /// Stores `row` under `id` only when no row has that id. Returns false, writing
    /// nothing, when one exists. Engines that can fail an insert on an existing key
    /// (SQLite's primary-key constraint, LMDB's `MDB_NOOVERWRITE`) save the read the
    /// default implementation makes.
    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool

    /// Removes the row stored under `id`, if any.
    func delete(_ entity: EntityDescription, id: Value) throws

    /// Appends `changeSet`'s entries to the persisted change log, in this transaction.
    /// Called at most once, last, and only when the transaction changed something. Afterwards
    /// ``ReadTransaction/lastSequence()`` returns `changeSet.sequence`.
    func record(_ changeSet: ChangeSet) throws

    /// Keeps `value` under metadata `key` (nil removes it), in this transaction. Writing
    /// metadata is not a change: it records no change set. The default refuses.
    func setMetadata(_ key: String, to value: Data?) throws

    /// Deletes every change set whose sequence is `sequence` or lower from the change log, in
    /// this transaction (those already gone are no error). Called by ``Store`` after
    /// ``record(_:)`` when the backend gives a ``StorageBackend/historyRetention``, which decides
    /// `sequence`; it is always below the newest change set. The default does nothing.
    func trimChangeLog(through sequence: UInt64) throws

    /// Removes `columns` from the entity's storage: a migration (``Store/migrate(_:)``) calls
    /// it, in its transaction, after it rewrote every row of `entity` without them and put
    /// `entity` (the description, which no longer lists them). Rows no longer hold the
    /// columns, so the default does nothing; a backend whose tables keep declared columns
    /// (SQLite, PostgreSQL) drops them here, so plain-SQL clients see them gone. A column the
    /// storage does not have is skipped.
    func dropColumns(_ columns: [String], from entity: EntityDescription) throws

    /// Removes the entity's storage: a migration calls it, in its transaction, after it
    /// deleted every row of `entity` (an entity renamed). An entity without rows is already
    /// left out of ``ReadTransaction/entities()``, so the default does nothing; a backend
    /// with a table per entity drops the table (and what belongs to it) here.
    func dropEntity(_ entity: EntityDescription) throws

    /// Removes the index on `column`: a migration's ``MigrationStep/dropIndex(on:in:)`` calls
    /// it, in its transaction, after it put every row of `entity` under the description (which
    /// no longer lists the index). A backend that drops an index as soon as a put's description
    /// leaves it out (SQLite, LMDB, memory) has nothing left to do, which is the default; one
    /// that keeps indexes a put leaves out (PostgreSQL, so that apps of several versions
    /// sharing a server do not drop and rebuild each other's) drops it here.
    func dropIndex(on column: String, in entity: EntityDescription) throws
}

extension WriteTransaction {
    /// Nothing to do: no row holds the columns any more.
    public func dropColumns(_ columns: [String], from entity: EntityDescription) throws {}

    /// Nothing to do: the entity has no rows, so it is not listed.
    public func dropEntity(_ entity: EntityDescription) throws {}

    /// Nothing to do: the put under the description without the index dropped it.
    public func dropIndex(on column: String, in entity: EntityDescription) throws {}
}
