import Foundation
import Reservoir

/// Names of the named databases and metadata keys, and the encodings of what the
/// metadata and change-log databases hold.
///
/// | database | key | value |
/// | --- | --- | --- |
/// | `meta` | `format` | format version, 4 bytes big-endian (4; 5 once a column was renamed in place) |
/// | `meta` | `entity/NAME` | the entity's description |
/// | `meta` | `data/KEY` | metadata the library keeps (``ReadTransaction/metadata(_:)``): consumers' history holds, the history clock |
/// | `meta` | `store` | the store's identity: a UUID's 16 bytes, made when the store is created (or first opened by a library that makes them) |
/// | `meta` | `layout/` then 4 bytes big-endian | a column layout that rows name (``RowLayout``) |
/// | `meta` | `renames/NAME` | the entity's columns renamed in place (``RenameHistory``) |
/// | `log` | sequence, 8 bytes big-endian | the change set's record (``ChangeLogCodec``; the last key is the newest sequence) |
/// | `rows/NAME` | encoded id | encoded row |
/// | `index/NAME/COLUMN` | encoded value, then encoded id | empty |
enum StoreFormat {
    /// The format this library writes, and ``renamesFormat`` once a migration renamed columns
    /// in place (``RenameHistory``, `renames/NAME` in `meta`): a library that does not know
    /// renames would read the old names, so it refuses such a store, while stores without
    /// renames stay readable by it. Format 4 writes change-log records that carry their
    /// commit's identity (``ChangeLogCodec`` version 4, see ``CommitPosition``), which format 3
    /// code cannot read, so it refuses the store at open instead of failing on its log later.
    /// Format 3 writes the core's change-log records
    /// (``ChangeLogCodec``); format 2 rows name a stored column layout (``RowLayout``);
    /// format 1 stores hold rows that spell their columns. Older stores are upgraded when
    /// opened: their rows and log records stay as they are and are still read.
    static let formatVersion: UInt32 = 4
    static let renamesFormat: UInt32 = 5
    static let readableFormats: ClosedRange<UInt32> = 1...5
    static let metaDatabase = "meta"
    static let logDatabase = "log"
    static let formatKey = Array("format".utf8)
    static let storeKey = Array("store".utf8)
    static let entityKeyPrefix = Array("entity/".utf8)
    static func metadataKey(_ key: String) -> [UInt8] { Array("data/".utf8) + Array(key.utf8) }

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

    /// The entries of a log record; nil when the bytes are not one. This library writes the
    /// core's record (``ChangeLogCodec``, version 4; version 3 in format 3 stores); versions 1 and 2, which format 1 and 2
    /// stores hold, are still read: version 1 had one entry per id (count, then per entry
    /// kind, entity and id), version 2 grouped them like version 3 but stored each id as a
    /// row value (``RowCodec``).
    static func decodeEntries(_ bytes: UnsafeRawBufferPointer, sequence: UInt64) -> [ChangeLogEntry]? {
        if let version = bytes.first, ChangeLogCodec.readableRecordVersions.contains(version) {
            return ChangeLogCodec.decodeRecord(bytes, sequence: sequence)
        }
        var reader = ByteReader(bytes)
        let version = reader.byte()
        guard version == 1 || version == 2, let count = reader.varint(), count <= UInt64(bytes.count) else { return nil }
        var entries: [ChangeLogEntry] = []
        func kind() -> ChangeType? { reader.byte().flatMap(ChangeLogCodec.kind) }
        if version == 1 {
            entries.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let kind = kind(), let entity = reader.string(), let id = RowCodec.readValue(&reader) else { return nil }
                entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind))
            }
        } else {
            for _ in 0..<count {
                guard let kind = kind(), let entity = reader.string(),
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
