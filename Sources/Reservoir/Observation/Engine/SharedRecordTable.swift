import Foundation

/// The decoded `T` records of one entity that live fetches hold (see ``SharedRecords``).
///
/// Each entry lists the live fetches holding it (``LiveEntry/holders``); the last to let go
/// removes it. The holders are kept by the fetches (``acquire(_:holder:)``,
/// ``release(_:holder:)``) rather than by weak references, because an object that is weakly
/// referenced is retained and released through its side table, which made every list walk
/// over the entries slower.
final class SharedRecordTable<T: Storable>: HeldRecordTable, @unchecked Sendable {
    // @unchecked: `current`, `displaced` and every held entry's `holders` are guarded by `lock`.
    /// Guards `current`, `displaced` and every held entry's `holders`. Lock order: 5th and
    /// last of the store's five (see ``ChangeHub``): nothing is taken under it.
    private let lock = NSLock()
    /// The newest version held of each record.
    private var current = EntryIndex()
    /// Older versions some fetch still holds: only while a change set is on its way through
    /// the fetches holding the record (or a fetch still loading applies it late), so this is
    /// nearly always empty and costs nothing per record.
    private var displaced: [Value: [LiveEntry<T>]] = [:]

    /// The entry for record `id` at exactly `row`: the one held, or `row` decoded. The
    /// caller acquires it once it keeps it.
    func entry(id: Value, row: Row) throws -> LiveEntry<T> {
        lock.lock()
        let held = typed(current.find(id))
        lock.unlock()
        if let held, held.row == row { return held }
        return LiveEntry(id: id, row: row, record: try RecordCoding.decode(T.self, from: row))
    }

    /// The entries for `rows` (id and row each), decoded where none is held, and acquired
    /// for `holder`: a fetch's whole result in one pass under the lock. On a decode error
    /// nothing stays acquired.
    func acquireEntries(_ rows: [(id: Value, row: Row)], holder: UInt64) throws -> [LiveEntry<T>] {
        lock.lock()
        defer { lock.unlock() }
        var entries: [LiveEntry<T>] = []
        entries.reserveCapacity(rows.count)
        do {
            for (id, row) in rows {
                if let held = typed(current.find(id)), held.row == row {
                    held.holders.add(holder)
                    entries.append(held)
                } else {
                    let entry = LiveEntry(id: id, row: row, record: try RecordCoding.decode(T.self, from: row))
                    acquireLocked(entry, holder: holder)
                    entries.append(entry)
                }
            }
        } catch {
            for entry in entries { releaseLocked(entry, holder: holder) }
            throw error
        }
        return entries
    }

    /// Adds `holder` to each of `entries`; an entry other than the one held for its id
    /// takes its place (fetches still holding that one keep it, among the displaced).
    func acquire(_ entries: some Sequence<LiveEntry<T>>, holder: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        for entry in entries { acquireLocked(entry, holder: holder) }
    }

    /// Removes `holder` from each of `entries`, forgetting those no fetch holds.
    func release(_ entries: some Sequence<LiveEntry<T>>, holder: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        for entry in entries { releaseLocked(entry, holder: holder) }
    }

    /// The version of each of `ids` that `holder` holds, where it holds one.
    func heldEntries(_ ids: some Sequence<Value>, holder: UInt64) -> [LiveEntry<T>] {
        lock.lock()
        defer { lock.unlock() }
        var found: [LiveEntry<T>] = []
        for id in ids {
            if let entry = typed(current.find(id)), entry.holders.contains(holder) {
                found.append(entry)
            } else if !displaced.isEmpty, let older = displaced[id]?.first(where: { $0.holders.contains(holder) }) {
                found.append(older)
            }
        }
        return found
    }

    func formHolders(of ids: [Value], into tokens: inout Set<UInt64>) {
        lock.lock()
        defer { lock.unlock() }
        for id in ids {
            current.find(id)?.holders.forEach { tokens.insert($0) }
            guard !displaced.isEmpty, let older = displaced[id] else { continue }
            for entry in older { entry.holders.forEach { tokens.insert($0) } }
        }
    }

    /// How many records some fetch holds an entry of (for tests and memory reports).
    var heldCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return current.count
    }

    /// How many older versions are still held (for tests).
    var displacedCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return displaced.values.reduce(0) { $0 + $1.count }
    }

    /// `entry` as what it is: this table indexes only its own `LiveEntry<T>`s, so the
    /// unchecked downcast holds (``EntryIndex`` keeps them as their non-generic base).
    private func typed(_ entry: HeldEntry?) -> LiveEntry<T>? {
        entry.map { unsafeDowncast($0, to: LiveEntry<T>.self) }
    }

    private func acquireLocked(_ entry: LiveEntry<T>, holder: UInt64) {
        // A held entry is indexed already (as current or displaced): only its holders change.
        guard entry.holders.isEmpty else { return entry.holders.add(holder) }
        entry.holders.add(holder)
        if let replaced = typed(current.set(entry)) {
            displaced[entry.id, default: []].append(replaced)
        }
    }

    private func releaseLocked(_ entry: LiveEntry<T>, holder: UInt64) {
        guard !entry.holders.remove(holder) else { return }
        let id = entry.id
        if current.find(id) === entry {
            // The newest version is let go: an older one still held takes its place.
            // `displaced` is nearly always empty: skip the generic dictionary's accessors then
            // (unspecialized over T, each costs thousands of instructions).
            if !displaced.isEmpty, let older = displaced[id]?.popLast() {
                current.set(older)
                if displaced[id]?.isEmpty == true { displaced[id] = nil }
            } else {
                current.remove(id)
            }
        } else if !displaced.isEmpty, displaced[id] != nil {
            displaced[id]?.removeAll { $0 === entry }
            if displaced[id]?.isEmpty == true { displaced[id] = nil }
        }
    }
}
