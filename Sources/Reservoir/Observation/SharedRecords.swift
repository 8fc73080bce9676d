import Foundation

/// One store's decoded records held by live fetches, once each: a record that several
/// live fetches hold (overlapping ranges, the same records in two sort orders) is decoded
/// and kept once, and each fetch's list points at the one ``LiveEntry``.
///
/// Entries are keyed by record type, entity and id, and counted by the fetches holding them;
/// an entry is reused only for exactly its row (``Row/==``), so a change set's new version
/// of a record replaces it for the next fetch that asks, and fetches still holding the old
/// version keep theirs until their own change arrives. Sharing is best effort: a lookup
/// that misses decodes a copy, never a wrong version.
final class SharedRecords: @unchecked Sendable {
    // @unchecked: `tables` is guarded by `lock`.
    private struct TableKey: Hashable {
        let type: ObjectIdentifier
        let entity: String
    }

    private let lock = NSLock()
    private var tables: [TableKey: AnyObject] = [:]

    /// The table of `T` records of `entity`.
    func table<T: Storable>(for type: T.Type, entity: String) -> SharedRecordTable<T> {
        lock.lock()
        defer { lock.unlock() }
        let key = TableKey(type: ObjectIdentifier(type), entity: entity)
        if let table = tables[key] as? SharedRecordTable<T> { return table }
        let table = SharedRecordTable<T>()
        tables[key] = table
        return table
    }
}

/// The decoded `T` records of one entity that live fetches hold (see ``SharedRecords``).
///
/// Each slot counts the live fetches holding its entry; the last to let go removes it. The
/// count is kept by the fetches (``acquire(_:)``, ``release(_:)``) rather than by weak
/// references, because an object that is weakly referenced is retained and released
/// through its side table, which made every list walk over the entries slower.
final class SharedRecordTable<T: Storable>: @unchecked Sendable {
    // @unchecked: the slots are guarded by `lock`.
    private struct Slot {
        let entry: LiveEntry<T>
        var holders: Int
    }

    private let lock = NSLock()
    private var slots: [Value: Slot] = [:]

    /// The entry for record `id` at exactly `row`: the one held, or `row` decoded. The
    /// caller acquires it once it keeps it.
    func entry(id: Value, row: Row) throws -> LiveEntry<T> {
        lock.lock()
        let held = slots[id]?.entry
        lock.unlock()
        if let held, held.row == row { return held }
        return LiveEntry(id: id, row: row, record: try RecordCoding.decode(T.self, from: row))
    }

    /// The entries for `rows` (id and row each), decoded where none is held, and acquired:
    /// a fetch's whole result in one pass under the lock.
    func acquireEntries(_ rows: [(id: Value, row: Row)]) throws -> [LiveEntry<T>] {
        lock.lock()
        defer { lock.unlock() }
        var entries: [LiveEntry<T>] = []
        entries.reserveCapacity(rows.count)
        for (id, row) in rows {
            if var slot = slots[id], slot.entry.row == row {
                slot.holders += 1
                slots[id] = slot
                entries.append(slot.entry)
            } else {
                let entry = LiveEntry(id: id, row: row, record: try RecordCoding.decode(T.self, from: row))
                slots[id] = Slot(entry: entry, holders: 1)
                entries.append(entry)
            }
        }
        return entries
    }

    /// Counts one more holder of each of `entries`; an entry newer than the one held for
    /// its id takes the slot (fetches still holding the older one keep their own).
    func acquire(_ entries: some Sequence<LiveEntry<T>>) {
        lock.lock()
        defer { lock.unlock() }
        for entry in entries {
            if var slot = slots[entry.id], slot.entry === entry {
                slot.holders += 1
                slots[entry.id] = slot
            } else {
                slots[entry.id] = Slot(entry: entry, holders: 1)
            }
        }
    }

    /// Counts one holder fewer of each of `entries`, forgetting those no fetch holds.
    func release(_ entries: some Sequence<LiveEntry<T>>) {
        lock.lock()
        defer { lock.unlock() }
        for entry in entries {
            guard var slot = slots[entry.id], slot.entry === entry else { continue }
            slot.holders -= 1
            slots[entry.id] = slot.holders > 0 ? slot : nil
        }
    }

    /// How many records some fetch holds an entry of (for tests and memory reports).
    var heldCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return slots.count
    }
}
