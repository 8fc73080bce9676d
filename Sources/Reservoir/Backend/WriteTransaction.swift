import Foundation

/// The write transaction: a ``ReadTransaction`` that also sees its own writes.
public protocol WriteTransaction: ReadTransaction {
    /// Stores `row` under `id`, inserting or replacing. Creates the entity's storage
    /// (table, named database, indexes, new columns) on first use.
    func put(_ entity: EntityDescription, id: Value, row: Row) throws

    /// Stores `row` under `id` in place of `previous`: the row this transaction's
    /// ``ReadTransaction/row(_:id:)`` returned for `id` just before, nothing written in between
    /// (an update, which reads the stored record to compare). A backend that maintains its own
    /// indexes takes the old values from `previous` rather than reading and decoding the stored
    /// row again. The default is ``put(_:id:row:)``.
    func put(_ entity: EntityDescription, id: Value, row: Row, replacing previous: Row) throws

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

    /// Renames columns of the entity's storage in place, keeping every value and index: a
    /// migration's ``MigrationStep/renameField(_:to:in:)`` calls it, in its transaction, with the
    /// field's column and its folded shadow columns (`renames`, each old name with its new one),
    /// `entity` as stored and `renamed`, the description afterwards. Returns true when it did:
    /// then every row holds its values under the new names, an index on an old name is on the
    /// new one, and ``ReadTransaction/entities()`` lists `renamed`. Returns false, changing
    /// nothing, when it cannot (a storage without named columns, a new name its storage has
    /// already, even with no value in any row): the
    /// migration then rewrites every row instead, which is the default. A backend with
    /// transactional DDL (SQLite's and PostgreSQL's `ALTER TABLE … RENAME COLUMN`) saves that
    /// rewrite of every row.
    func renameColumns(_ renames: [(old: String, new: String)], in entity: EntityDescription,
                       to renamed: EntityDescription) throws -> Bool

    /// Gives `column` of every row of `entity` a new value: a migration's
    /// ``MigrationStep/changeType(of:in:from:to:_:)`` and ``MigrationStep/addField(_:to:indexed:computing:)``
    /// call it, in their transaction, with `entity` as stored and `target`, the description
    /// afterwards (the same but for an added field or index). `pages` reads the entity a page at
    /// a time in id order and calls its argument with each ``ColumnPage``: every row of the
    /// entity once, as the step left it (only `column` differs), and which rows the step
    /// changed. The pages are made while this runs, so a backend may read the entity meanwhile
    /// (the rows it has not been given yet are as stored); an error `pages` throws (a transform
    /// that failed) must leave this call by throwing it. Afterwards every row holds its new value
    /// and ``ReadTransaction/entities()`` lists `target`.
    ///
    /// The default puts each changed row under `target` (and the first row, when `target`
    /// differs from `entity`, so that the description reaches the backend). A backend that can
    /// take a column's values in bulk does better: PostgreSQL stages them with `COPY` and sets
    /// the column in one `UPDATE`, its type changed once to the values' own.
    func replaceColumn(_ column: String, in entity: EntityDescription, as target: EntityDescription,
                       pages: ((ColumnPage) throws -> Void) throws -> Void) throws

    /// Replaces each value of `column` of every row of `entity` (stored as described, and
    /// described the same afterwards) by `convert` of it, in one pass the backend drives: a
    /// migration's ``MigrationStep/changeType(of:in:from:to:_:)`` calls it first. `convert` is
    /// given the row's id beside the value, for the error naming the record; an error it throws
    /// must leave this call by throwing it, and nothing of the pass may stay. `converted` is told
    /// now and then how many rows were converted so far. Returns false, changing nothing, when
    /// the backend cannot (the default): the migration then uses
    /// ``replaceColumn(_:in:as:pages:)``. SQLite runs one `UPDATE` that calls `convert` through
    /// an application-defined SQL function, so rows are neither read out nor sought one by one;
    /// LMDB walks the row database with a cursor.
    func convertColumn(_ column: String, in entity: EntityDescription,
                       _ convert: (_ id: Value, _ value: Value) throws -> Value,
                       converted: (Int) -> Void) throws -> Bool
}

extension WriteTransaction {
    /// ``put(_:id:row:)``: `previous` is not needed.
    public func put(_ entity: EntityDescription, id: Value, row: Row, replacing previous: Row) throws {
        try put(entity, id: id, row: row)
    }

    /// Nothing to do: no row holds the columns any more.
    public func dropColumns(_ columns: [String], from entity: EntityDescription) throws {}

    /// Nothing to do: the entity has no rows, so it is not listed.
    public func dropEntity(_ entity: EntityDescription) throws {}

    /// Nothing to do: the put under the description without the index dropped it.
    public func dropIndex(on column: String, in entity: EntityDescription) throws {}

    /// Renames nothing: the migration rewrites every row under the new names.
    public func renameColumns(_ renames: [(old: String, new: String)], in entity: EntityDescription,
                              to renamed: EntityDescription) throws -> Bool { false }

    /// Converts nothing: the migration uses ``replaceColumn(_:in:as:pages:)``.
    public func convertColumn(_ column: String, in entity: EntityDescription,
                              _ convert: (_ id: Value, _ value: Value) throws -> Value,
                              converted: (Int) -> Void) throws -> Bool { false }

    /// Puts each changed row under `target`, and the first row when `target` differs from `entity`.
    public func replaceColumn(_ column: String, in entity: EntityDescription, as target: EntityDescription,
                              pages: ((ColumnPage) throws -> Void) throws -> Void) throws {
        try putChangedRows(in: entity, as: target, pages: pages)
    }

    /// What ``replaceColumn(_:in:as:pages:)`` does by default, for a backend that takes the
    /// bulk path only sometimes: puts each changed row under `target` (and the first row when
    /// `target` differs from `entity`, so that the description reaches the backend).
    public func putChangedRows(in entity: EntityDescription, as target: EntityDescription,
                               pages: ((ColumnPage) throws -> Void) throws -> Void) throws {
        var described = target == entity
        try pages { page in
            for (row, changed) in zip(page.rows, page.changed) where changed || !described {
                try put(target, id: row.value(target.idColumn), row: row)
                described = true
            }
        }
    }
}
