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
}
