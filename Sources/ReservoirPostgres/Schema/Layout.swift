import Foundation
import Reservoir

/// The tables of one store, all in its schema:
///
/// | table | holds |
/// | --- | --- |
/// | `_reservoir_meta` | one row: format version, the newest sequence and its commit's identity, the catalog version, the transaction that last took a sequence, the store's identity (a UUID made with the store) |
/// | `_reservoir_entities` | each record type as last written: id column, fields, indexes |
/// | `_reservoir_columns` | each entity's columns, in order, with their ``ColumnKind`` |
/// | `_reservoir_changes` | the change log: one row per entity and kind for this library's commits (ids packed, ``PackedIDs``), one per record for other clients' (from triggers); each row holds its change set's sequence and commit identity (``CommitPosition``) |
/// | `_reservoir_metadata` | what the library keeps beside the data (``ReadTransaction/metadata(_:)``): consumers' history holds (`history.holds`) and the history clock (`history.clock`), JSON; made by the first one written |
/// | one per record type | the records: the id as primary key, one column per field |
///
/// The meta row is the write lock: every writer, this library's and (through the
/// triggers) any SQL client's, updates it before it commits, so writers are serialised by
/// its row lock and sequence order is commit order.
///
/// Format 2 added the store's identity (`store_id`) and the commit identities (`commit_id` in the meta row and the change log): a
/// random number per change set, this library's from ``ChangeSet/commit``, other clients'
/// made by the trigger when their transaction takes its sequence. A format 1 store is upgraded
/// when opened (the columns added, the triggers replaced); its older change sets' identity is
/// unknown (NULL, read as 0).
struct Layout: Sendable {
    static let formatVersion = 2

    let schema: String
    /// The names below are made once: every transaction names the meta row and the change
    /// log, and Foundation's `replacingOccurrences` (in `quote`) costs microseconds a call.
    let quotedSchema: String
    let meta: String
    let entities: String
    let columns: String
    let changes: String
    /// `_reservoir_metadata`, made by the first metadata written, and the statement making it.
    let metadata: String
    let createMetadata: String
    /// The NOTIFY channel commits to this store are announced on (the sequence as payload).
    let channel: String
    /// The statements every commit sends, spelled once for the same reason: the writer's
    /// meta-row lock, a change-log row, the meta row's new sequence.
    let lockMeta: String
    let logInsert: String
    /// A reader's statements: the shared rewrite lock (``rewriteKeys``), taken before its
    /// snapshot and released after its `COMMIT`; and its meta row, the first statement of
    /// ``readBegin``'s transaction, which takes the snapshot.
    let readLock: String
    let readUnlock: String
    let readMeta: String
    /// A read transaction's start, sent in one pipeline with its first statement: the shared
    /// lock in a transaction of its own, so that it is held before the snapshot is taken (a lock
    /// taken inside the reading transaction would come after its snapshot, which the lock's
    /// statement itself takes); then `BEGIN` and the meta row, whose statement takes the
    /// snapshot. Ends are spelled `END` (PostgreSQL's `COMMIT`) so that a write's `COMMIT` is the
    /// only one on the wire, as the tests' TCPCutter needs. Results: 0 `BEGIN`, 1 the lock,
    /// 2 `END`, 3 `BEGIN`, 4 the meta row (``readMetaResult``), then the first statement's.
    let readStart: [PGPipelineItem]
    static let readMetaResult = 4
    /// Every read transaction's end: `END`, then the unlock, and a sync. Sent at a read's end
    /// they are a segment of their own, which runs even after an error in the transaction
    /// (`END` then rolls back); a point read sends them in its single segment.
    let readEnd: [PGPipelineItem]
    /// Every read transaction's `BEGIN`.
    static let readBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    /// `BEGIN` and `END` as prepared statements, as every statement of a read is: the server
    /// parses each once per connection, not at every transaction (Benchmarks/NOTES.md has the
    /// figures). A prepared `END` runs in a failed transaction as a typed one does. A write's
    /// `COMMIT` stays typed: the tests' `TCPCutter` finds it on the wire.
    static let begin = PGPipelineItem.prepared("BEGIN", [], binary: false)
    static let end = PGPipelineItem.prepared("END", [], binary: false)
    let metaUpdate: String

    init(schema: String) {
        self.schema = schema
        quotedSchema = Self.quote(schema)
        meta = quotedSchema + "." + Self.quote("_reservoir_meta")
        entities = quotedSchema + "." + Self.quote("_reservoir_entities")
        columns = quotedSchema + "." + Self.quote("_reservoir_columns")
        changes = quotedSchema + "." + Self.quote("_reservoir_changes")
        metadata = quotedSchema + "." + Self.quote("_reservoir_metadata")
        createMetadata = "CREATE TABLE IF NOT EXISTS \(metadata) (key text PRIMARY KEY, value bytea NOT NULL)"
        rewriteKeys = "hashtext('reservoir.rewrite'), hashtext(\(Self.literal(schema)))"
        channel = "reservoir." + schema
        lockMeta = "SELECT sequence, catalog, commit_id, txid_current(), store_id::text FROM \(meta) FOR UPDATE"
        readLock = "SELECT pg_advisory_lock_shared(\(rewriteKeys))"
        readUnlock = "SELECT pg_advisory_unlock_shared(\(rewriteKeys))"
        readMeta = "SELECT sequence, catalog, commit_id, store_id::text FROM \(meta)"
        logInsert = "INSERT INTO \(changes) (sequence, entity, kind, ids, commit_id) VALUES ($1::bigint, $2::text, $3::text, $4::bytea, $5::bigint)"
        metaUpdate = "UPDATE \(meta) SET sequence = $1::bigint, commit_id = $2::bigint, xact = pg_current_xact_id()"
        readStart = [Self.begin, .prepared(readLock, [], binary: false), Self.end,
                     .prepared(Self.readBegin, [], binary: false), .prepared(readMeta, [], binary: false)]
        readEnd = [Self.end, .prepared(readUnlock, [], binary: false), .sync]
    }

    static func quote(_ identifier: String) -> String {
        // Point reads quote their id column on every call: skip Foundation when nothing needs escaping.
        guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
        return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A string literal (standard_conforming_strings, the default since PostgreSQL 9.1).
    static func literal(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "'")) else { return "'" + text + "'" }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    func table(_ name: String) -> String {
        quotedSchema + "." + Self.quote(name)
    }


    /// Two keys for `pg_advisory_xact_lock`, so two processes creating the same new store
    /// do it one after the other.
    var setUpLock: String { "pg_advisory_xact_lock(hashtext('reservoir.setup'), hashtext(\(Self.literal(schema))))" }

    /// The keys of the lock that keeps readers and column rewrites apart. Readers hold it
    /// shared (session level, taken before their snapshot); a write that rewrites a column
    /// as mixed takes it exclusively. PostgreSQL's table rewrites are not MVCC-safe: a
    /// reader whose snapshot predates the rewrite would see the table empty, or fail with
    /// "cached plan must not change result type".
    let rewriteKeys: String

    /// The schema, created only when missing: `CREATE SCHEMA IF NOT EXISTS` needs `CREATE` on
    /// the database even when the schema exists, which a role owning only its schema lacks.
    var createSchema: String {
        "DO $$ BEGIN IF to_regnamespace(\(Self.literal(schema))) IS NULL THEN CREATE SCHEMA \(quotedSchema); END IF; END $$"
    }

    var createTables: String {
        """
        CREATE TABLE \(meta) (
            only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
            format integer NOT NULL,
            sequence bigint NOT NULL,
            catalog bigint NOT NULL,
            xact xid8,
            commit_id bigint,
            store_id uuid NOT NULL DEFAULT gen_random_uuid());
        INSERT INTO \(meta) (format, sequence, catalog) VALUES (\(Self.formatVersion), 0, 0);
        CREATE TABLE \(entities) (
            name text PRIMARY KEY,
            id_column text NOT NULL,
            fields text[] NOT NULL,
            indexes text[] NOT NULL,
            integer_ids boolean NOT NULL);
        CREATE TABLE \(columns) (
            entity text NOT NULL,
            name text NOT NULL,
            position integer NOT NULL,
            kind text NOT NULL,
            PRIMARY KEY (entity, name));
        CREATE TABLE \(changes) (
            change bigserial PRIMARY KEY,
            sequence bigint NOT NULL,
            entity text NOT NULL,
            kind text NOT NULL,
            ids bytea,
            key bytea,
            commit_id bigint);
        CREATE INDEX ON \(changes) (sequence);
        """
    }

    /// The trigger logging other SQL clients' writes to `table`, one change-log row per
    /// record, under the sequence of their transaction (taken from the meta row on its
    /// first write, which also waits for any other writer to commit). This library's writer
    /// sets `reservoir.writer`, so its own writes skip the trigger and log by entity instead.
    func trigger(for table: TableInfo) -> String {
        let entity = table.entity.name
        let function = self.table("_reservoir_log_" + entity)
        func log(_ kind: String, _ record: String) -> String {
            let id = "\(record).\(Self.quote(table.entity.idColumn))"
            let packed: String
            switch table.kinds[table.entity.idColumn] ?? .mixed {
            case .integer: packed = "'\\x01'::bytea || int8send(\(id))"
            case .real: packed = "'\\x02'::bytea || float8send(\(id))"
            case .text: packed = "'\\x03'::bytea || int4send(octet_length(\(id))) || convert_to(\(id), 'UTF8')"
            case .blob: packed = "'\\x04'::bytea || int4send(length(\(id))) || \(id)"
            case .mixed:
                return "INSERT INTO \(changes) (sequence, entity, kind, key, commit_id) VALUES (seq, \(Self.literal(entity)), '\(kind)', \(id), cid);"
            }
            return "INSERT INTO \(changes) (sequence, entity, kind, ids, commit_id) VALUES (seq, \(Self.literal(entity)), '\(kind)', \(packed), cid);"
        }
        let idColumn = Self.quote(table.entity.idColumn)
        return """
        CREATE OR REPLACE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $reservoir$
        DECLARE
            seq bigint;
            cid bigint;
        BEGIN
            -- The transaction's first write takes the next sequence and a fresh random identity,
            -- even: its lowest bit clear says another client made it (CommitPosition.origin).
            UPDATE \(meta) SET
                sequence = sequence + CASE WHEN xact IS NOT DISTINCT FROM pg_current_xact_id() THEN 0 ELSE 1 END,
                commit_id = CASE WHEN xact IS NOT DISTINCT FROM pg_current_xact_id() THEN commit_id
                                 ELSE 2 * (1 + floor(random() * 4.6e18)::bigint) END,
                xact = pg_current_xact_id()
                RETURNING sequence, commit_id INTO seq, cid;
            IF TG_OP = 'INSERT' THEN
                \(log("i", "NEW"))
            ELSIF TG_OP = 'DELETE' THEN
                \(log("d", "OLD"))
            ELSIF NEW.\(idColumn) IS DISTINCT FROM OLD.\(idColumn) THEN
                \(log("d", "OLD"))
                \(log("i", "NEW"))
            ELSE
                \(log("u", "NEW"))
            END IF;
            PERFORM pg_notify(\(Self.literal(channel)), seq::text);
            RETURN NULL;
        END
        $reservoir$;
        DROP TRIGGER IF EXISTS _reservoir_log ON \(self.table(entity));
        CREATE TRIGGER _reservoir_log AFTER INSERT OR UPDATE OR DELETE ON \(self.table(entity))
            FOR EACH ROW WHEN (current_setting('reservoir.writer', true) IS DISTINCT FROM 'on')
            EXECUTE FUNCTION \(function)();
        """
    }
}

extension Layout {
    /// The NOTIFY channel this library's commits also send their change sets on
    /// (``CommitAnnouncement``), named by the store's identity: any role that may connect can
    /// `LISTEN`, but only one that can read the meta row knows this name, so the rows travel
    /// only to roles that could read them anyway. Distinct from ``channel`` (a dot there).
    static func announcementChannel(_ identity: UUID) -> String {
        // The UUID's 16 bytes as 32 lowercase hex digits (its `uuidString`, lowercased, without
        // dashes), spelled byte by byte: filtering the string by characters cost about 24,000
        // instructions a commit.
        let digits: StaticString = "0123456789abcdef"
        var text: [UInt8] = Array("reservoir:".utf8)
        text.reserveCapacity(text.count + 32)
        digits.withUTF8Buffer { digits in
            withUnsafeBytes(of: identity.uuid) { bytes in
                for byte in bytes {
                    text.append(digits[Int(byte >> 4)])
                    text.append(digits[Int(byte & 0x0F)])
                }
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// An announcement's payload: the schema, a colon, the announcement. The schema tells a
    /// copy of this store in another schema (same identity, same channel) to ignore it.
    func announcementPayload(_ announcement: CommitAnnouncement) -> String? {
        // NOTIFY refuses a payload of 8000 bytes or more.
        announcement.encoded(limit: 7999 - schema.utf8.count - 1).map { schema + ":" + $0 }
    }

    /// The announcement in `payload` when it names this schema; nil for another schema's.
    func announcement(in payload: String) throws -> CommitAnnouncement? {
        // Base64 has no colon: the last one ends the schema. (Scanned as bytes: a scan by
        // characters over the whole payload was a sixth of the listener's time.)
        // Over the contiguous bytes: the view's own index steps cost more than the scan.
        var payload = payload
        let text: String? = payload.withUTF8 { bytes in
            guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")),
                  UnsafeBufferPointer(rebasing: bytes[..<colon]).elementsEqual(schema.utf8) else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[(colon + 1)...]), as: UTF8.self)
        }
        guard let text else { return nil }
        return try CommitAnnouncement(decoding: text, from: "PostgreSQL schema \(schema)")
    }
}
