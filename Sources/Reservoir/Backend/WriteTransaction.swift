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
}
