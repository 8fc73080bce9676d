import Foundation
import Reservoir

/// Names of the named databases and metadata keys, and the encodings of what the
/// metadata and change-log databases hold.
///
/// | database | key | value |
/// | --- | --- | --- |
/// | `meta` | `format` | format version, 4 bytes big-endian (2) |
/// | `meta` | `entity/NAME` | the entity's description |
/// | `meta` | `layout/` then 4 bytes big-endian | a column layout that rows name (``RowLayout``) |
/// | `log` | sequence, 8 bytes big-endian | the change set's entries (the last key is the newest sequence) |
/// | `rows/NAME` | encoded id | encoded row |
/// | `index/NAME/COLUMN` | encoded value, then encoded id | empty |
enum StoreFormat {
    /// The format this library writes. Format 2 rows name a stored column layout (``RowLayout``);
    /// format 1 stores hold rows that spell their columns, and are upgraded when opened.
    static let formatVersion: UInt32 = 2
    static let readableFormats: ClosedRange<UInt32> = 1...2
    static let metaDatabase = "meta"
    static let logDatabase = "log"
    static let formatKey = Array("format".utf8)
    static let entityKeyPrefix = Array("entity/".utf8)

    static func rowsDatabase(_ entity: String) -> String { "rows/" + entity }
    static func indexDatabase(_ entity: String, _ column: String) -> String { "index/\(entity)/\(column)" }
    static func entityKey(_ entity: String) -> [UInt8] { entityKeyPrefix + Array(entity.utf8) }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    static func readBigEndian(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard bytes.count == 8 else { return nil }
        var value: UInt64 = 0
        for byte in bytes { value = value << 8 | UInt64(byte) }
        return value
    }

    // MARK: - Entity descriptions

    /// Version 1: name, id column, fields, indexes. Version 2 adds a flags byte (bit 0:
    /// integer ids); it is written only when a flag is set, so descriptions without flags
    /// stay readable by code that knows version 1 alone.
    static func encode(_ entity: EntityDescription) -> [UInt8] {
        let flags: UInt8 = entity.integerIDs ? 1 : 0
        var out = ByteWriter()
        out.bytes.append(flags == 0 ? 1 : 2)
        out.string(entity.name)
        out.string(entity.idColumn)
        out.strings(entity.fields)
        out.strings(entity.indexes)
        if flags != 0 { out.bytes.append(flags) }
        return out.bytes
    }

    static func decodeEntity(_ bytes: UnsafeRawBufferPointer) -> EntityDescription? {
        var reader = ByteReader(bytes)
        guard let version = reader.byte(), version == 1 || version == 2,
              let name = reader.string(), let idColumn = reader.string(),
              let fields = reader.strings(), let indexes = reader.strings()
        else { return nil }
        var flags: UInt8 = 0
        if version == 2 {
            guard let stored = reader.byte(), stored & ~1 == 0 else { return nil }
            flags = stored
        }
        guard reader.isAtEnd else { return nil }
        return EntityDescription(name: name, idColumn: idColumn, fields: fields, indexes: indexes, integerIDs: flags & 1 != 0)
    }

    // MARK: - Change-log records

    /// A change set as its log record holds it (version 2): its changes grouped by entity
    /// and kind, as the core nets them, so a bulk insert names its entity once.
    ///
    ///     2 · group count (varint) · per group:
    ///         kind (0 inserted, 1 updated, 2 deleted) · entity (varint length, UTF-8) ·
    ///         id count (varint) · ids (tag and payload, as row values)
    ///
    /// Written straight into the page LMDB reserves for it: ``logRecordSize(_:)`` bytes.
    /// Version 1, which stores versions before this one wrote and which is still read, had
    /// one entry per id: count, then per entry kind, entity and id.
    static func writeLogRecord(_ changeSet: ChangeSet, to base: UnsafeMutablePointer<UInt8>) -> Int {
        var sink = LogRecordWriter(out: RawWriter(base: base))
        visitLogGroups(changeSet, &sink)
        return sink.out.offset
    }

    /// The exact number of bytes ``writeLogRecord(_:to:)`` writes.
    static func logRecordSize(_ changeSet: ChangeSet) -> Int {
        var sink = LogRecordSizer()
        visitLogGroups(changeSet, &sink)
        return sink.size
    }

    /// The one walk over a change set that sizing and writing its record share.
    private static func visitLogGroups<Sink: LogRecordSink>(_ changeSet: ChangeSet, _ sink: inout Sink) {
        let groups = changeSet.entities.reduce(0) { count, changes in
            count + (changes.inserted.isEmpty ? 0 : 1) + (changes.updated.isEmpty ? 0 : 1) + (changes.deleted.isEmpty ? 0 : 1)
        }
        sink.header(version: 2, groups: groups)
        for changes in changeSet.entities {
            if !changes.inserted.isEmpty {
                sink.group(kind: 0, entity: changes.entity, count: changes.inserted.count)
                ids(of: changes.inserted, &sink)
            }
            if !changes.updated.isEmpty {
                sink.group(kind: 1, entity: changes.entity, count: changes.updated.count)
                ids(of: changes.updated, &sink)
            }
            if !changes.deleted.isEmpty {
                sink.group(kind: 2, entity: changes.entity, count: changes.deleted.count)
                for id in changes.deleted { sink.id(id) }
            }
        }
    }

    /// Passes each change's id to `sink`, reading it in place: a loop over the changes would
    /// copy each one out, retaining and releasing its row for nothing.
    @inline(__always)
    private static func ids<Sink: LogRecordSink>(of changes: [RowChange], _ sink: inout Sink) {
        changes.withUnsafeBufferPointer { changes in
            for position in changes.indices { sink.id(changes[position].id) }
        }
    }

    private static func kind(_ byte: UInt8?) -> ChangeType? {
        switch byte {
        case 0: .inserted
        case 1: .updated
        case 2: .deleted
        default: nil
        }
    }

    /// The entries of a log record of either version; nil when the bytes are not one.
    static func decodeEntries(_ bytes: UnsafeRawBufferPointer, sequence: UInt64) -> [ChangeLogEntry]? {
        var reader = ByteReader(bytes)
        let version = reader.byte()
        guard version == 1 || version == 2, let count = reader.varint(), count <= UInt64(bytes.count) else { return nil }
        var entries: [ChangeLogEntry] = []
        if version == 1 {
            entries.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let kind = kind(reader.byte()), let entity = reader.string(), let id = RowCodec.readValue(&reader) else { return nil }
                entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind))
            }
        } else {
            for _ in 0..<count {
                guard let kind = kind(reader.byte()), let entity = reader.string(),
                      let ids = reader.varint(), ids <= UInt64(bytes.count)
                else { return nil }
                entries.reserveCapacity(entries.count + Int(ids))
                for _ in 0..<ids {
                    guard let id = RowCodec.readValue(&reader) else { return nil }
                    entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind))
                }
            }
        }
        return reader.isAtEnd ? entries : nil
    }
}

private protocol LogRecordSink {
    mutating func header(version: UInt8, groups: Int)
    mutating func group(kind: UInt8, entity: String, count: Int)
    mutating func id(_ id: Value)
}

private struct LogRecordSizer: LogRecordSink {
    var size = 0
    mutating func header(version: UInt8, groups: Int) {
        size += 1 + RowCodec.varintLength(UInt64(groups))
    }
    mutating func group(kind: UInt8, entity: String, count: Int) {
        size += 1 + RowCodec.lengthPrefixedSize(entity.utf8.count) + RowCodec.varintLength(UInt64(count))
    }
    mutating func id(_ id: Value) {
        size += RowCodec.valueSize(id)
    }
}

private struct LogRecordWriter: LogRecordSink {
    var out: RawWriter
    mutating func header(version: UInt8, groups: Int) {
        out.byte(version)
        out.varint(UInt64(groups))
    }
    mutating func group(kind: UInt8, entity: String, count: Int) {
        out.byte(kind)
        out.string(entity)
        out.varint(UInt64(count))
    }
    mutating func id(_ id: Value) {
        out.value(id)
    }
}

extension ByteWriter {
    /// A count, then each string: what ``ByteReader/strings()`` reads.
    mutating func strings(_ texts: [String]) {
        varint(UInt64(texts.count))
        for text in texts { string(text) }
    }
}

extension ByteReader {
    mutating func string() -> String? {
        guard let bytes = lengthPrefixed() else { return nil }
        return String(validating: bytes.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }

    mutating func strings() -> [String]? {
        guard let count = varint(), count <= UInt64(buffer.count) else { return nil }
        var result: [String] = []
        for _ in 0..<count {
            guard let text = string() else { return nil }
            result.append(text)
        }
        return result
    }
}
