import Foundation

/// A consistent view of the store, valid only inside the ``StorageBackend/read(_:)``
/// or ``StorageBackend/write(_:)`` body it was passed to.
public protocol ReadTransaction {
    /// The row stored under `id` in the entity named `entity`, or nil.
    func row(_ entity: String, id: Value) throws -> Row?

    /// Calls `body` with the row ``row(_:id:)`` returns and returns true, or returns false
    /// when there is none: how ``Snapshot`` and ``Store`` read one record. A backend may lend
    /// `body` one `Row` it refills in place for each call (see ``Row/withUnsafeMutableValues(_:)``),
    /// which spares allocating and freeing a row per point read; `Row` is a value, so a body
    /// that keeps the row keeps an unchanging copy. `body` must not use the transaction. Not
    /// generic, so a call through `any ReadTransaction` builds no type metadata. The default
    /// calls ``row(_:id:)``.
    func withRow(_ entity: String, id: Value, _ body: (Row) throws -> Void) throws -> Bool

    /// Exactly the rows `QueryEvaluator.evaluate(query, over: allRowsOfTheEntity)` returns,
    /// in that order. An entity never written to has no rows.
    func fetch(_ query: Query) throws -> [Row]

    /// Calls `body` with each row `fetch(query)` returns, in the same order, without
    /// collecting them: ``Store`` decodes records this way. A backend may hand `body` one
    /// `Row` refilled in place for each row (see ``Row/withUnsafeMutableValues(_:)``); `Row` is a value,
    /// so a body that keeps a row keeps an unchanging copy. `body` must not use the
    /// transaction (the backend may be mid-scan). When `body` throws, the fetch stops and
    /// rethrows.
    func fetch(_ query: Query, each body: (Row) throws -> Void) throws

    /// ``fetch(_:each:)``, first telling `expecting` how many rows will follow when the
    /// backend knows before the first one, so the caller can size its storage once instead
    /// of growing it (a 100,000-record array grown by doubling spends more time copying and
    /// faulting in fresh pages than a fast backend spends reading). A backend that calls
    /// `expecting` calls it once, before `body`, with exactly the number of rows `body` then
    /// receives; one that learns the count only by reading (a SQLite statement) never calls it,
    /// and the store collects what it returns in a per-thread block first (`RecordCollector`).
    func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws

    /// ``fetch(_:expecting:each:)``, handing each row to one of two bodies: `rows` a `Row`, or
    /// `readers` a ``RowReader`` over the row's columns where the backend holds them (a
    /// ``ColumnSource``): how ``Store`` and ``Snapshot`` decode records, through
    /// ``Storable/init(row:)`` or ``Storable/init(reader:)``. A backend that reads whole rows
    /// passes them to `rows` (the default calls ``fetch(_:expecting:each:)`` with it); one that
    /// can read a result's columns in place lends `readers` one reader for every row. Either
    /// way each row goes to exactly one body, in order, and a reader's columns, values and
    /// decodes are exactly those of the row `fetch(_:expecting:each:)` would pass.
    func scan(_ query: Query, expecting: (Int) -> Void, rows: (Row) throws -> Void,
              readers: (borrowing RowReader) throws -> Void) throws

    /// The number of rows `fetch(query)` would return.
    func count(_ query: Query) throws -> Int

    /// One description per entity holding at least one row, exactly as last passed to
    /// ``WriteTransaction/put(_:id:row:)``, in any order; an entity whose rows were all
    /// deleted is left out. Inside a write, the write's own changes count.
    func entities() throws -> [EntityDescription]

    /// The sequence number of the newest change set committed (0 when none).
    func lastSequence() throws -> UInt64

    /// The newest change set's position: ``lastSequence()`` and the identity its
    /// ``WriteTransaction/record(_:)`` was given (``ChangeSet/commit``), or that the backend
    /// made for commits it numbers itself (plain SQL). ``Store`` reads it on every write and
    /// every probe that finds a commit, so a backend keeps it as cheap as ``lastSequence()``.
    /// The default reads the identity from the change log (``commit(at:)``).
    func lastCommit() throws -> CommitPosition

    /// The store's identity: a random UUID made when the store was created and kept in its
    /// files, so a ``HistoryToken`` names the store it came from. Nil while the store has none
    /// (a PostgreSQL store before its first write). The default is nil: such a backend's tokens
    /// cannot tell its stores apart.
    func storeIdentity() throws -> UUID?

    /// The position of change set `sequence` while the change log still holds it, else nil.
    /// The default reads it from ``changeLog(after:limit:)``'s entries.
    func commit(at sequence: UInt64) throws -> CommitPosition?

    /// Change-log entries with a sequence above `sequence`, in sequence order, at most `limit`
    /// change sets' worth. Backends keep a bounded history; entries older than it are gone.
    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry]

    /// The bytes the store keeps under metadata `key` (``WriteTransaction/setMetadata(_:to:)``),
    /// or nil. Keys are chosen by this library (`history.holds`, `history.clock`); a backend
    /// keeps them beside its other metadata, durably and in its transactions. The default: none.
    func metadata(_ key: String) throws -> Data?
}
