/// One version of one record in a live result: its id, row and decoded value, and the
/// live fetches holding it.
///
/// A class so the sorted list moves pointers, not records, and so "the same version"
/// is object identity: an update replaces the entry, an untouched record keeps it.
final class LiveEntry<T: Sendable>: HeldEntry, @unchecked Sendable {
    // @unchecked: immutable after init; `holders`, in the base class, is guarded as it says.
    let record: T

    init(id: Value, row: Row, record: T) {
        self.record = record
        super.init(id: id, row: row)
    }
}

/// What every ``LiveEntry`` has whatever its record type: the id, the row and the fetches
/// holding it. ``EntryIndex`` stores these, so its probing loops are ordinary code rather
/// than generic code over the app's record type, which runs unspecialized (metadata looked
/// up on every array access: thousands of instructions a lookup in a profile).
class HeldEntry: @unchecked Sendable {
    // @unchecked: immutable after init but for `holders`, which only the store's
    // ``SharedRecordTable`` touches, under its lock.
    let id: Value
    let row: Row
    /// The live fetches holding this version (kept here, not in a map beside it, so a held
    /// record costs the table one pointer).
    var holders = HolderTokens()

    init(id: Value, row: Row) {
        self.id = id
        self.row = row
    }
}

/// A fetch request's results, kept up to date from change sets without re-running the
/// fetch: each changed record is removed and re-inserted by binary search in the
/// query's total order, so a commit touching k records costs O(k log n) plus pointer
/// moves. It falls back to a re-fetch only where it must: a full `limit` window that
/// loses a member it cannot replace, and any change under a non-zero `offset` (whose
/// hidden prefix it does not hold). Its entries come from the store's ``SharedRecordTable``,
/// so live fetches holding the same record version share one decoded copy, and the table
/// (not a map of its own) says which version of a changed record this fetch holds.
final class LiveResults<T: Storable> {
    typealias Entry = LiveEntry<T>

    /// What applying a change set did, as positions: `removed` in the list before,
    /// `inserted` in the list after.
    struct Delta {
        var removed: [(offset: Int, entry: Entry)]
        var inserted: [(offset: Int, entry: Entry)]
        var isEmpty: Bool { removed.isEmpty && inserted.isEmpty }
    }

    let query: Query
    private(set) var entries: ChunkedList<Entry>
    /// The newest change set reflected in `entries`.
    private(set) var sequence: UInt64
    /// Where entries come from, shared with the store's other live fetches.
    private let records: SharedRecordTable<T>
    /// This fetch's name among the holders of `records` (its observer's hub token).
    private let holder: UInt64

    /// Fetches the results in one snapshot of `backend`, taking entries from `records` and
    /// holding them as `holder`.
    init(query: Query, backend: any StorageBackend, records: SharedRecordTable<T>, holder: UInt64) throws {
        self.query = query
        self.records = records
        self.holder = holder
        entries = ChunkedList()
        sequence = 0
        try load(from: backend)
    }

    deinit {
        records.release(entries, holder: holder)
    }

    /// Re-runs the fetch; returns what changed, by identity.
    private func refetch(from backend: any StorageBackend) throws -> Delta {
        let old = entries
        try load(from: backend)
        records.release(old, holder: holder)
        return identityDelta(from: old.array, to: entries.array)
    }

    /// Runs the fetch and records the snapshot's sequence.
    private func load(from backend: any StorageBackend) throws {
        let query = self.query
        let (rows, sequence) = try backend.read { reader in
            (try reader.fetch(query), try reader.lastSequence())
        }
        let idColumn = query.entity.idColumn
        let entries = try records.acquireEntries(rows.map { (id: $0.value(idColumn), row: $0) }, holder: holder)
        self.entries = ChunkedList(entries)
        self.sequence = sequence
    }

    /// Brings the results up to date with `changeSet`; returns what changed (empty when nothing did).
    func apply(_ changeSet: ChangeSet, backend: any StorageBackend) throws -> Delta {
        let none = Delta(removed: [], inserted: [])
        // A rewound history's change set may carry a sequence already passed: it re-reads anyway.
        guard changeSet.sequence > sequence || changeSet.isRewound else { return none }
        sequence = changeSet.sequence
        guard changeSet.isComplete else {
            // What changed is no longer known (the change log was trimmed past it, or the
            // history was rewound).
            return try refetch(from: backend)
        }
        guard let changes = changeSet.changes(to: query.entity.name), !changes.isEmpty else { return none }
        if query.offset > 0 {
            // Records before the window are not held, so any change may shift it.
            return try refetch(from: backend)
        }

        // Each touched id once: its new row, or nil when deleted.
        var touched: [Value: Row?] = [:]
        for id in changes.deleted { touched[id] = .some(nil) }
        for change in changes.inserted { touched[change.id] = .some(change.row) }
        for change in changes.updated { touched[change.id] = .some(change.row) }

        // Old versions leaving the list, and new versions that match.
        var leaving = records.heldEntries(touched.keys, holder: holder)
        var arriving: [Entry] = []
        for (id, newRow) in touched {
            if let row = newRow, query.predicate.map({ QueryEvaluator.matches($0, row) }) ?? true {
                arriving.append(try records.entry(id: id, row: row))
            }
        }
        if !leaving.isEmpty && !arriving.isEmpty {
            // A record whose row came back exactly as held (byte for byte: a plain SQL
            // `update … set x = x`, an update and its reversal in one transaction) did not
            // change: it stays where it is, and nothing is announced for it.
            var held: [Value: Entry] = [:]
            for entry in leaving { held[entry.id] = entry }
            var unchanged: Set<Value> = []
            for entry in arriving {
                if let kept = held[entry.id], kept === entry || kept.row == entry.row { unchanged.insert(entry.id) }
            }
            if !unchanged.isEmpty {
                leaving.removeAll { unchanged.contains($0.id) }
                arriving.removeAll { unchanged.contains($0.id) }
            }
        }
        if leaving.isEmpty && arriving.isEmpty { return none }

        // A full window only knows records up to its last one: anything sorting after it
        // stays outside, and a window left short must be re-fetched to find its new members.
        if let limit = query.limit, entries.count >= limit, let last = entries.last {
            arriving.removeAll { compare($0.row, last.row) > 0 }
            if entries.count - leaving.count + arriving.count < limit {
                return try refetch(from: backend)
            }
        }

        let oldCount = entries.count
        // (Sorting and mapping run as unspecialized generic code here, which costs even for
        // one element: a commit usually touches one record, so they run only when needed.)
        var removed: [(offset: Int, entry: Entry)] = []
        if !leaving.isEmpty {
            removed.reserveCapacity(leaving.count)
            for entry in leaving { removed.append((offset: offset(of: entry.row), entry: entry)) }
            if removed.count > 1 { removed.sort { $0.offset > $1.offset } }
        }
        for (offset, _) in removed {
            entries.remove(at: offset)
        }
        let arrivedAlone = arriving.count == 1
        var lastInsertion = 0
        for entry in arriving {
            lastInsertion = insertionPoint(for: entry.row)
            entries.insert(entry, at: lastInsertion)
        }
        if let limit = query.limit, entries.count > limit {
            // Past the window now: new arrivals (never inserted, as far as the subscriber
            // knows) and old members pushed out, which are the last surviving old entries.
            let tail = entries.removeSuffix(from: limit)
            let pushedOut = tail.filter { entry in !arriving.contains { $0 === entry } }
            let leavingOffsets = Set(removed.map { $0.offset })
            var oldOffsets: [Int] = []
            var candidate = oldCount - 1
            while oldOffsets.count < pushedOut.count && candidate >= 0 {
                if !leavingOffsets.contains(candidate) { oldOffsets.append(candidate) }
                candidate -= 1
            }
            for (entry, offset) in zip(pushedOut, oldOffsets.reversed()) {
                removed.append((offset: offset, entry: entry))
            }
            arriving.removeAll { arrival in tail.contains { $0 === arrival } }
        }
        if removed.count > 1 { removed.sort { $0.offset < $1.offset } }
        var inserted: [(offset: Int, entry: Entry)] = []
        if !arriving.isEmpty {
            inserted.reserveCapacity(arriving.count)
            if arrivedAlone, arriving.count == 1, let only = arriving.first {
                // Where it was inserted: only the window's tail may have gone since.
                inserted.append((offset: lastInsertion, entry: only))
            } else {
                for entry in arriving { inserted.append((offset: offset(of: entry.row), entry: entry)) }
            }
            if inserted.count > 1 { inserted.sort { $0.offset < $1.offset } }
        }
        // Closures rather than key paths here and across Observation: in unspecialized
        // generic code a key path literal is built at run time each time it is evaluated
        // (a type lookup by mangled name), which profiled at several µs per commit.
        if !inserted.isEmpty { records.acquire(inserted.lazy.map { $0.entry }, holder: holder) }
        if !removed.isEmpty { records.release(removed.lazy.map { $0.entry }, holder: holder) }
        return Delta(removed: removed, inserted: inserted)
    }

    // MARK: - Binary search in the query's total order

    private func compare(_ lhs: Row, _ rhs: Row) -> Int {
        QueryEvaluator.compare(lhs, rhs, by: query.sort)
    }

    /// The index of the first entry that does not sort before `row`.
    private func insertionPoint(for row: Row) -> Int {
        entries.partitionPoint { compare($0.row, row) < 0 }
    }

    /// The index of the entry holding `row` (rows are unique in the total order: the id ends every sort).
    private func offset(of row: Row) -> Int {
        insertionPoint(for: row)
    }
}

/// What changed between two lists of entries, by identity: O(n), for coalesced sends
/// and re-fetches. Entries in both keep their relative order, so removals (old offsets)
/// then insertions (new offsets) turn `old` into `new`.
func identityDelta<T>(from old: [LiveEntry<T>], to new: [LiveEntry<T>]) -> LiveResults<T>.Delta {
    let oldSet = Set(old.lazy.map(ObjectIdentifier.init))
    let newSet = Set(new.lazy.map(ObjectIdentifier.init))
    var removed: [(offset: Int, entry: LiveEntry<T>)] = []
    for (offset, entry) in old.enumerated() where !newSet.contains(ObjectIdentifier(entry)) {
        removed.append((offset, entry))
    }
    var inserted: [(offset: Int, entry: LiveEntry<T>)] = []
    for (offset, entry) in new.enumerated() where !oldSet.contains(ObjectIdentifier(entry)) {
        inserted.append((offset, entry))
    }
    return LiveResults<T>.Delta(removed: removed, inserted: inserted)
}
