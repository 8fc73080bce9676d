import Foundation
import Reservoir

/// Names of the named databases and metadata keys, and the encodings of what the
/// metadata and change-log databases hold.
///
/// | database | key | value |
/// | --- | --- | --- |
/// | `meta` | `format` | format version, 4 bytes big-endian (1) |
/// | `meta` | `entity/NAME` | the entity's description |
/// | `log` | sequence, 8 bytes big-endian | the change set's entries (the last key is the newest sequence) |
/// | `rows/NAME` | encoded id | encoded row |
/// | `index/NAME/COLUMN` | encoded value, then encoded id | empty |
enum Catalog {
    static let formatVersion: UInt32 = 1
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
        out.varint(UInt64(entity.fields.count))
        for field in entity.fields { out.string(field) }
        out.varint(UInt64(entity.indexes.count))
        for index in entity.indexes { out.string(index) }
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

    /// One change set's entries: count, then per entry kind (0 inserted, 1 updated,
    /// 2 deleted), entity name, id as a row value.
    static func encode(_ entries: [ChangeLogEntry]) -> [UInt8] {
        var out = ByteWriter()
        // Usually exact for numeric ids: grows at most once or twice otherwise.
        var estimate = 1 + RowCodec.varintLength(UInt64(entries.count))
        for entry in entries { estimate += 2 + entry.entity.utf8.count + 11 }
        out.bytes.reserveCapacity(estimate)
        out.bytes.append(1)
        out.varint(UInt64(entries.count))
        for entry in entries {
            switch entry.kind {
            case .inserted: out.bytes.append(0)
            case .updated: out.bytes.append(1)
            case .deleted: out.bytes.append(2)
            }
            out.string(entry.entity)
            RowCodec.appendValue(entry.id, to: &out)
        }
        return out.bytes
    }

    static func decodeEntries(_ bytes: UnsafeRawBufferPointer, sequence: UInt64) -> [ChangeLogEntry]? {
        var reader = ByteReader(bytes)
        guard reader.byte() == 1, let count = reader.varint(), count <= UInt64(bytes.count) else { return nil }
        var entries: [ChangeLogEntry] = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count {
            let kind: ChangeType
            switch reader.byte() {
            case 0: kind = .inserted
            case 1: kind = .updated
            case 2: kind = .deleted
            default: return nil
            }
            guard let entity = reader.string(), let id = RowCodec.readValue(&reader) else { return nil }
            entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind))
        }
        return reader.isAtEnd ? entries : nil
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
