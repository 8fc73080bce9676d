import Foundation
import Reservoir

/// The write transaction, on the writer connection (`reservoir.writer` set, so the
/// tables' triggers leave logging to ``record(_:)``), holding the meta row's lock from its
/// first statement: no other writer, in any process, commits until it ends.
///
/// Schema changes (a new table, a new column, a column becoming mixed) happen in the same
/// transaction, bump the catalog version, and so roll back with everything else.
final class PGWriteTransaction: PGReadTransaction, WriteTransaction {
    var catalogChanged = false
    /// Once this write changed the schema, its tables are its own until it commits: the SQL
    /// it makes stays with it.
    override var sharesStatements: Bool { !catalogChanged }
    /// The identity of the change set this transaction logged (``record(_:)``), so a lost
    /// `COMMIT` can be recognised in the log (PostgresBackend+CommitOutcome.swift).
    private(set) var loggedCommit: UInt64 = 0

    // MARK: - Writes

    func put(_ entity: EntityDescription, id: Value, row: Row) throws {
        try begin()
        let id = id.stored
        let table = try prepareRow(entity, id: id, row: row)
        if table.idKind == .mixed {
            // The primary key holds the id's spelling (1 or 1.0); the record is the one equal
            // to it in any spelling, so replace that one.
            try delete(entity, id: id)
        }
        raiseFloor(entity.name, id)
        let (sql, parameters) = try upsert(table, id: id, row: row, mode: .upsert)
        try connection.enqueue(sql, parameters)
    }

    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        try checkOpen()
        let id = id.stored
        // The run of known-new rows of a bulk load: straight into its COPY.
        if let run = copyRun, case let .integer(key) = id, key > run.floor, run.catalog == catalog.version, run.table.entity == entity,
           try connection.copyRow(run.command, fieldCount: run.table.columns.count, { Self.append(row, id: id, of: run.table, to: $0) }) {
            run.floor = key
            return true
        }
        endCopyRun()
        if !begun, case .integer = id, let table = catalog.tables[entity.name], table.idKind == .integer,
           let result = try begin(reading: (floorStatement(table), [])) {
            floors[entity.name] = Self.maximum(result)
        }
        try begin()
        if knownNew >= Self.insertsBeforeCopy, case let .integer(key) = id, let table = catalog.tables[entity.name],
           table.idKind == .integer, let known = floors[entity.name], key > known, table.entity == entity {
            let command = copyCommand(table)
            if try connection.copyRow(command, fieldCount: table.columns.count, { Self.append(row, id: id, of: table, to: $0) }) {
                copyRun = CopyRun(table: table, command: command, catalog: catalog.version, floor: key)
                return true
            }
        }
        let table = try prepareRow(entity, id: id, row: row)
        if case let .integer(key) = id, table.idKind == .integer, key > (try floor(table)) {
            // Above every id the table holds: new for sure, so no answer is awaited.
            floors[entity.name] = key
            knownNew += 1
            if knownNew <= Self.insertsBeforeCopy {
                // A few go as queued INSERTs: a COPY costs two round trips of its own (open, end).
                let (sql, parameters) = try upsert(table, id: id, row: row, mode: .new)
                try connection.enqueue(sql, parameters)
            } else {
                try connection.copyRow(copyCommand(table), try fields(table, id: id, row: row))
            }
            return true
        }
        if table.idKind == .mixed, try self.row(entity.name, id: id) != nil { return false }
        let (sql, parameters) = try upsert(table, id: id, row: row, mode: .insert)
        guard try connection.run(sql, parameters).affectedRows == 1 else { return false }
        raiseFloor(entity.name, id)
        return true
    }

    func delete(_ entity: EntityDescription, id: Value) throws {
        try begin()
        guard let table = catalog.tables[entity.name],
              let match = ColumnCodec.equality(table.entity.idColumn, kind: table.idKind, id.stored) else { return }
        try connection.enqueue("DELETE FROM \(layout.table(entity.name)) WHERE \(match.sql)", match.parameters)
    }

    // MARK: - Known new ids

    /// Per entity with integer ids: no id above this is stored (the table's maximum when
    /// first asked, raised by every id written since). The transaction holds the write lock,
    /// so nobody else adds one meanwhile; deletes only lower the true maximum.
    private var floors: [String: Int64] = [:]

    /// The table a run of known-new rows streams into, with what each row needs found once
    /// for the run (a bulk load of 100,000 rows looked up the table, its `COPY` command and
    /// its floor by name at every row, and copied the table's description twice: about 3,000
    /// instructions a row). While the run lasts, the entity's floor is kept here, not in
    /// `floors`; ``endCopyRun()`` puts it back before anything else reads or raises floors.
    private final class CopyRun {
        /// The table, whose `entity` is the record type's description the run writes.
        let table: TableInfo
        let command: String
        /// The catalog version `table` is of.
        let catalog: Int64
        var floor: Int64

        init(table: TableInfo, command: String, catalog: Int64, floor: Int64) {
            self.table = table
            self.command = command
            self.catalog = catalog
            self.floor = floor
        }
    }

    private var copyRun: CopyRun?

    /// Ends the run of rows streaming into a `COPY`, its floor back in `floors`.
    private func endCopyRun() {
        guard let run = copyRun else { return }
        floors[run.table.entity.name] = run.floor
        copyRun = nil
    }

    /// Rows known new that this transaction sent as INSERTs; past ``insertsBeforeCopy`` they
    /// stream into a `COPY`.
    private var knownNew = 0

    /// Known-new rows sent as queued INSERTs before a transaction switches to `COPY`, whose
    /// two round trips (open, end) pay off only over many rows.
    static let insertsBeforeCopy = 16

    private func floor(_ table: TableInfo) throws -> Int64 {
        endCopyRun()
        if let known = floors[table.entity.name] { return known }
        let known = Self.maximum(try connection.run(floorStatement(table)))
        floors[table.entity.name] = known
        return known
    }

    /// The statement reading `table`'s largest id.
    private func floorStatement(_ table: TableInfo) -> String {
        "SELECT max(\(Layout.quote(table.entity.idColumn))) FROM \(layout.table(table.entity.name))"
    }

    /// A `max(id)` result's value; `Int64.min` for an empty table.
    private static func maximum(_ result: PGResult) -> Int64 {
        result.rowCount > 0 && !result.isNull(0, 0) ? result.int64(0, 0) : Int64.min
    }

    private func raiseFloor(_ entity: String, _ id: Value) {
        endCopyRun()
        if case let .integer(key) = id, let known = floors[entity], key > known { floors[entity] = key }
    }

    func record(_ changeSet: ChangeSet) throws {
        try begin()
        guard let sequence = Int64(exactly: changeSet.sequence) else {
            throw ReservoirError(.valueOutOfRange, "\(connection.name): sequence \(changeSet.sequence) does not fit a bigint")
        }
        try ChangeLogCodec.forEachGroup(changeSet) { entity, kind, ids in
            try connection.enqueue(layout.logInsert, [.integer(sequence), .text(entity), .text(Self.kindCode(kind)), .bytes([UInt8](PackedIDs.pack(ids))),
                                                      .integer(Int64(bitPattern: changeSet.commit))])
        }
        try connection.enqueue(layout.metaUpdate, [.integer(sequence), .integer(Int64(bitPattern: changeSet.commit))])
        loggedCommit = changeSet.commit
        // The change set itself first, for this library's listeners; then the plain signal, which
        // they skip for a sequence just announced, and which psql, triggers and older versions use.
        if let identity, let announcement = CommitAnnouncement(previous: CommitPosition(sequence: self.sequence, commit: self.commit), changeSet: changeSet),
           let payload = layout.announcementPayload(announcement) {
            try connection.enqueue(Self.notify, [.text(Layout.announcementChannel(identity)), .text(payload)])
        }
        try connection.enqueue(Self.notify, [.text(layout.channel), .text(String(sequence))])
        self.sequence = changeSet.sequence
        self.commit = changeSet.commit
    }

    func trimChangeLog(through sequence: UInt64) throws {
        try begin()
        try connection.enqueue("DELETE FROM \(layout.changes) WHERE sequence <= $1::bigint", [.integer(Int64(clamping: sequence))])
    }

    /// Keeps `value` in `_reservoir_metadata`, which the first metadata written creates (in this
    /// transaction, under the write lock every writer holds).
    func setMetadata(_ key: String, to value: Data?) throws {
        try begin()
        if try !metadataTableExists() {
            guard value != nil else { return }
            try connection.execute(layout.createMetadata)
        }
        if let value {
            try connection.enqueue("INSERT INTO \(layout.metadata) (key, value) VALUES ($1::text, $2::bytea) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   [.text(key), .bytes([UInt8](value))])
        } else {
            try connection.enqueue("DELETE FROM \(layout.metadata) WHERE key = $1::text", [.text(key)])
        }
    }

    /// The commit's announcement to other clients (``PostgresBackend`` drops its own).
    private static let notify = "SELECT pg_notify($1::text, $2::text)"

    /// The letter the change log stores `kind` as.
    private static func kindCode(_ kind: ChangeType) -> String {
        switch kind {
        case .inserted: "i"
        case .updated: "u"
        case .deleted: "d"
        }
    }

    // MARK: - Rows

    /// The table for `entity`, with its columns made able to hold `row` under `id`.
    private func prepareRow(_ entity: EntityDescription, id: Value, row: Row) throws -> TableInfo {
        guard !id.isNull else {
            throw ReservoirError(.invalidQuery, "\(connection.name): a record of \(entity.name) has a null id; ids must not be null")
        }
        var table = try prepareTable(entity, firstID: id)
        table = try prepareColumn(entity.idColumn, for: id, in: table)
        for (column, value) in zip(row.columns, row.values) where column != entity.idColumn {
            table = try prepareColumn(column, for: value.stored, in: table)
        }
        return table
    }

    /// `row`'s value for each of the table's columns, in table order (null where it has none).
    private func fields(_ table: TableInfo, id: Value, row: Row) throws -> [PGParameter] {
        let idColumn = table.entity.idColumn
        return try table.columns.map { column in
            let value = column == idColumn ? id : row.value(column).stored
            guard let parameter = ColumnCodec.parameter(value, kind: table.kinds[column] ?? .mixed, isID: column == idColumn) else {
                throw ReservoirError(.backend, "\(connection.name): column \(column) of \(table.entity.name) cannot hold \(value)")
            }
            return parameter
        }
    }

    /// Appends `row`'s fields for a binary `COPY` into `table`, when no schema change is
    /// needed for it: its columns are the table's, in order, and each value is of its
    /// column's kind. Otherwise returns false, and ``insert(_:id:row:)`` takes the long way
    /// (``prepareRow(_:id:row:)``), which a bulk load of 100,000 rows pays for once, not per row.
    private static func append(_ row: Row, id: Value, of table: TableInfo, to buffer: CopyBuffer) -> Bool {
        guard row.columns == table.columns, table.columns.first == table.entity.idColumn else { return false }
        let kinds = table.columnKinds
        for (index, value) in row.values.enumerated() {
            // The exact kind, as prepareColumn demands (isID false), and the id as given.
            guard let field = ColumnCodec.parameter(index == 0 ? id : value.stored, kind: kinds[index], isID: false) else { return false }
            field.appendField(to: buffer)
        }
        return true
    }

    /// The `COPY` new rows of `table` stream into.
    private func copyCommand(_ table: TableInfo) -> String {
        let key = StatementKey(entity: table.entity.name, kind: .copy, present: 0)
        if let cached = statement(key) { return cached }
        let command = "COPY \(layout.table(table.entity.name)) (\(table.selectList)) FROM STDIN (FORMAT binary)"
        keep(command, for: key)
        return command
    }

    /// The INSERT for `row` under `id` (columns already prepared), for its non-null columns:
    /// `mode` `.upsert` replaces a row with that id, `.insert` leaves it (and touches no row),
    /// `.new` has no conflict clause (the id is known new; a conflict is an error).
    private func upsert(_ table: TableInfo, id: Value, row: Row, mode: StatementKey.Kind) throws -> (String, [PGParameter]) {
        let all = try fields(table, id: id, row: row)
        var present: UInt64 = 0
        var parameters: [PGParameter] = []
        parameters.reserveCapacity(all.count)
        for (index, field) in all.enumerated() {
            if case .null = field { continue }
            if index < 64 { present |= 1 << UInt64(index) }
            parameters.append(field)
        }
        let key = StatementKey(entity: table.entity.name, kind: mode, present: present)
        if table.columns.count <= 64, let cached = statement(key) { return (cached, parameters) }
        var names: [String] = []
        var placeholders: [String] = []
        for (column, field) in zip(table.columns, all) {
            if case .null = field { continue }
            names.append(Layout.quote(column))
            placeholders.append("$\(placeholders.count + 1)::\((table.kinds[column] ?? .mixed).castType)")
        }
        let idColumn = table.entity.idColumn
        var sql = "INSERT INTO \(layout.table(table.entity.name)) (\(names.joined(separator: ", "))) VALUES (\(placeholders.joined(separator: ", ")))"
        let others = table.columns.filter { $0 != idColumn }
        if mode == .upsert && !others.isEmpty {
            sql += " ON CONFLICT (\(Layout.quote(idColumn))) DO UPDATE SET "
                + others.map { "\(Layout.quote($0)) = EXCLUDED.\(Layout.quote($0))" }.joined(separator: ", ")
        } else if mode != .new {
            sql += " ON CONFLICT (\(Layout.quote(idColumn))) DO NOTHING"
        }
        if table.columns.count <= 64 { keep(sql, for: key) }
        return (sql, parameters)
    }
}

