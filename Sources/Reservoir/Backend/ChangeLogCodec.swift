import Foundation

/// The change log's encoding, written once for every backend: a change set's changes
/// grouped by entity and kind (so a bulk insert names its entity once), each group's ids
/// as ``PackedIDs``.
///
/// A backend that keeps one log row per group (SQLite, PostgreSQL) walks the groups with
/// ``forEachGroup(_:_:)`` and stores each group's ids packed; a backend that keeps one
/// record per change set (LMDB) stores ``writeRecord(_:to:)``'s bytes and reads them back
/// with ``decodeRecord(_:sequence:)``:
///
///     4 (record version) · commit identity (8 bytes, little-endian) · group count (varint) · per group:
///         kind (0 inserted, 1 updated, 2 deleted) · entity (varint length, UTF-8) ·
///         id count (varint) · the ids as PackedIDs (integers in its compact form, tag 5)
///
/// Version 3 records, written before commits had identities, are the same without the
/// identity; they are still read, with identity 0 (not known).
///
/// Readers net what they decode with ``ChangeLogNetting``.
public enum ChangeLogCodec {
    /// The version byte a record starts with.
    public static let recordVersion: UInt8 = 4
    /// The versions ``decodeRecord(_:sequence:)`` reads.
    public static let readableRecordVersions: ClosedRange<UInt8> = 3...4

    /// The ids of one group: a change set's rows' ids or its deleted ids, read in place.
    public struct GroupIDs: RandomAccessCollection, Sendable {
        fileprivate enum Storage: Sendable {
            case changes([RowChange])
            case ids([Value])
        }

        fileprivate let storage: Storage

        /// The first position, 0.
        public var startIndex: Int { 0 }
        /// The number of ids.
        public var endIndex: Int {
            switch storage {
            case let .changes(changes): changes.count
            case let .ids(ids): ids.count
            }
        }

        /// The id at `position`.
        public subscript(position: Int) -> Value {
            switch storage {
            case let .changes(changes): changes[position].id
            case let .ids(ids): ids[position]
            }
        }

        /// Calls `body` with each id, without copying the changes that hold them (a loop
        /// over the changes would retain and release each row for nothing).
        @inline(__always)
        public func forEachID(_ body: (Value) throws -> Void) rethrows {
            switch storage {
            case let .changes(changes):
                try changes.withUnsafeBufferPointer { changes in
                    for position in changes.indices { try body(changes[position].id) }
                }
            case let .ids(ids):
                for id in ids { try body(id) }
            }
        }
    }

    /// The number of groups `changeSet` has: one per entity and kind with changes.
    public static func groupCount(_ changeSet: ChangeSet) -> Int {
        changeSet.entities.reduce(0) { count, changes in
            count + (changes.inserted.isEmpty ? 0 : 1) + (changes.updated.isEmpty ? 0 : 1) + (changes.deleted.isEmpty ? 0 : 1)
        }
    }

    /// Calls `body` with each group of `changeSet`, by entity, then inserted, updated, deleted.
    public static func forEachGroup(
        _ changeSet: ChangeSet, _ body: (_ entity: String, _ kind: ChangeType, _ ids: GroupIDs) throws -> Void
    ) rethrows {
        for changes in changeSet.entities {
            if !changes.inserted.isEmpty { try body(changes.entity, .inserted, GroupIDs(storage: .changes(changes.inserted))) }
            if !changes.updated.isEmpty { try body(changes.entity, .updated, GroupIDs(storage: .changes(changes.updated))) }
            if !changes.deleted.isEmpty { try body(changes.entity, .deleted, GroupIDs(storage: .ids(changes.deleted))) }
        }
    }

    // MARK: - Records

    /// The exact number of bytes ``writeRecord(_:to:)`` writes for `changeSet`.
    public static func recordSize(_ changeSet: ChangeSet) -> Int {
        var size = 1 + 8 + varintLength(UInt64(groupCount(changeSet)))
        forEachGroup(changeSet) { entity, _, ids in
            let length = entity.utf8.count
            size += 1 + varintLength(UInt64(length)) + length + varintLength(UInt64(ids.count))
            ids.forEachID { size += PackedIDs.size($0, compact: true) }
        }
        return size
    }

    /// Writes `changeSet`'s record at `base` (``recordSize(_:)`` bytes, which the caller
    /// reserved) and returns the number of bytes written. The position is a local struct's,
    /// written in plain loops: captured by the closures of ``forEachGroup(_:_:)`` it was a
    /// boxed variable, checked for exclusive access on every byte.
    public static func writeRecord(_ changeSet: ChangeSet, to base: UnsafeMutableRawPointer) -> Int {
        var out = RecordWriter(base: base)
        out.byte(recordVersion)
        for shift in stride(from: 0, to: 64, by: 8) { out.byte(UInt8(truncatingIfNeeded: changeSet.commit >> UInt64(shift))) }
        out.varint(UInt64(groupCount(changeSet)))
        for changes in changeSet.entities {
            if !changes.inserted.isEmpty {
                out.group(changes.entity, .inserted, count: changes.inserted.count)
                for position in changes.inserted.indices { out.id(changes.inserted[position].id) }
            }
            if !changes.updated.isEmpty {
                out.group(changes.entity, .updated, count: changes.updated.count)
                for position in changes.updated.indices { out.id(changes.updated[position].id) }
            }
            if !changes.deleted.isEmpty {
                out.group(changes.entity, .deleted, count: changes.deleted.count)
                for id in changes.deleted { out.id(id) }
            }
        }
        return out.offset
    }

    /// Writes a record's bytes from `base` on (``writeRecord(_:to:)``).
    private struct RecordWriter {
        let base: UnsafeMutableRawPointer
        var offset = 0

        mutating func byte(_ value: UInt8) {
            base.storeBytes(of: value, toByteOffset: offset, as: UInt8.self)
            offset += 1
        }

        mutating func varint(_ value: UInt64) {
            var rest = value
            while rest >= 0x80 {
                byte(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            byte(UInt8(rest))
        }

        /// A group's head: its kind, its entity's name, its count of ids.
        mutating func group(_ entity: String, _ kind: ChangeType, count: Int) {
            byte(kindByte(kind))
            var name = entity
            name.withUTF8 { utf8 in
                varint(UInt64(utf8.count))
                if let source = utf8.baseAddress { (base + offset).copyMemory(from: source, byteCount: utf8.count) }
                offset += utf8.count
            }
            varint(UInt64(count))
        }

        mutating func id(_ id: Value) {
            offset += PackedIDs.write(id, to: base + offset, compact: true)
        }
    }

    /// The entries of a record numbered `sequence`, grouped as written (not netted); nil
    /// when the bytes are not a whole record of a version in ``readableRecordVersions``.
    public static func decodeRecord(_ bytes: UnsafeRawBufferPointer, sequence: UInt64) -> [ChangeLogEntry]? {
        var position = 0
        func varint() -> UInt64? { PackedIDs.readVarint(bytes, at: &position) }
        guard let version = bytes.first, readableRecordVersions.contains(version) else { return nil }
        position = 1
        var commit: UInt64 = 0
        if version >= 4 {
            guard bytes.count >= 9 else { return nil }
            commit = commitIdentity(ofRecord: bytes)
            position = 9
        }
        guard let groups = varint(), groups <= UInt64(bytes.count) else { return nil }
        var entries: [ChangeLogEntry] = []
        for _ in 0..<groups {
            guard position < bytes.count, let kind = kind(bytes[position]) else { return nil }
            position += 1
            guard let length = varint(), UInt64(bytes.count - position) >= length,
                  let entity = String(validating: UnsafeRawBufferPointer(rebasing: bytes[position..<(position + Int(length))]), as: UTF8.self)
            else { return nil }
            position += Int(length)
            guard let count = varint(), count <= UInt64(bytes.count) else { return nil }
            entries.reserveCapacity(entries.count + Int(count))
            for _ in 0..<count {
                guard let id = PackedIDs.read(bytes, at: &position) else { return nil }
                entries.append(ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind, commit: commit))
            }
        }
        return position == bytes.count ? entries : nil
    }

    /// The commit identity a record holds: 0 for a version 3 record, or bytes that are no record.
    public static func commitIdentity(ofRecord bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard bytes.count >= 9, bytes[0] >= 4, readableRecordVersions.contains(bytes[0]) else { return 0 }
        var commit: UInt64 = 0
        for index in 0..<8 { commit |= UInt64(bytes[1 + index]) << UInt64(8 * index) }
        return commit
    }

    /// The byte a record stores `kind` as.
    public static func kindByte(_ kind: ChangeType) -> UInt8 {
        switch kind {
        case .inserted: 0
        case .updated: 1
        case .deleted: 2
        }
    }

    /// The kind a record's byte stands for; nil for any other byte.
    public static func kind(_ byte: UInt8) -> ChangeType? {
        switch byte {
        case 0: .inserted
        case 1: .updated
        case 2: .deleted
        default: nil
        }
    }

    private static func varintLength(_ value: UInt64) -> Int { PackedIDs.varintLength(value) }
}
