/// One commit's effect on a fetch's results, by record identity, for list UIs: which
/// rows to delete, insert, move and reload, like NSFetchedResultsController's
/// delete/insert/move/update.
///
/// **Index convention** (UIKit batch updates use the same): `deleted` and `moved.old`
/// are positions in the previous list; `inserted` and `moved.new` are positions in the
/// new list; each `updated` entry gives both. Applying a change:
///
/// 1. remove the items at `deleted` and every `moved.old`, highest position first;
/// 2. insert `results[i]` at every `inserted` and `moved.new` position `i`, lowest first;
/// 3. replace the item at every `updated.new` position `i` with `results[i]`.
///
/// The outcome is exactly `results`. A record whose content changed but whose place
/// among the others did not is `updated`; one whose place changed is `moved` (reload it
/// too: it may also have changed). Records shifted only by others' insertions and
/// deletions are neither. Computed in O(n) by id, plus O(k log k) for the k records
/// that changed.
public struct ResultsChange<Record: Sendable>: Sendable {
    /// A position before and after the change.
    public struct Positions: Sendable, Hashable {
        /// The position in the previous results.
        public let old: Int
        /// The position in the new results.
        public let new: Int

        /// A record's position before (`old`) and after (`new`) the change.
        public init(old: Int, new: Int) {
            self.old = old
            self.new = new
        }
    }

    /// The results after the change.
    public let results: [Record]
    /// Positions in the previous list of records that left the results.
    public let deleted: [Int]
    /// Positions in the new list of records that joined the results.
    public let inserted: [Int]
    /// Records that stayed but changed place.
    public let moved: [Positions]
    /// Records that stayed in place with new content.
    public let updated: [Positions]

    /// Whether nothing changed.
    public var isEmpty: Bool { deleted.isEmpty && inserted.isEmpty && moved.isEmpty && updated.isEmpty }

    init(from previous: [LiveEntry<Record>], to current: [LiveEntry<Record>]) {
        results = current.map { $0.record }
        var oldIndex: [Value: Int] = [:]
        oldIndex.reserveCapacity(previous.count)
        for (i, entry) in previous.enumerated() { oldIndex[entry.id] = i }
        let currentIDs = Set(current.lazy.map { $0.id })
        deleted = previous.indices.filter { !currentIDs.contains(previous[$0].id) }

        // Records in both lists, in new order. Unchanged ones (the same entry object) keep
        // their relative order, so they anchor; a changed one is in place when it sits
        // between its anchors and in increasing order with the other changed ones there.
        var inserted: [Int] = []
        var common: [(new: Int, old: Int, anchored: Bool)] = []
        for (j, entry) in current.enumerated() {
            guard let i = oldIndex[entry.id] else {
                inserted.append(j)
                continue
            }
            common.append((j, i, previous[i] === entry))
        }
        self.inserted = inserted

        var nextAnchorOld = [Int](repeating: Int.max, count: common.count)
        var upcoming = Int.max
        for k in common.indices.reversed() {
            nextAnchorOld[k] = upcoming
            if common[k].anchored { upcoming = common[k].old }
        }
        var moved: [Positions] = []
        var updated: [Positions] = []
        var segment: [(new: Int, old: Int)] = []
        var previousAnchorOld = -1
        func closeSegment() {
            let keep = Self.longestIncreasing(segment.map { $0.old })
            for (k, item) in segment.enumerated() {
                let positions = Positions(old: item.old, new: item.new)
                if keep.contains(k) { updated.append(positions) } else { moved.append(positions) }
            }
            segment = []
        }
        for (k, item) in common.enumerated() {
            if item.anchored {
                closeSegment()
                previousAnchorOld = item.old
            } else if item.old > previousAnchorOld && item.old < nextAnchorOld[k] {
                segment.append((item.new, item.old))
            } else {
                moved.append(Positions(old: item.old, new: item.new))
            }
        }
        closeSegment()
        self.moved = moved.sorted { $0.new < $1.new }
        self.updated = updated.sorted { $0.new < $1.new }
    }

    /// Indices of one longest strictly increasing subsequence (patience sorting, O(k log k)).
    static func longestIncreasing(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []          // index into values of the smallest tail for each length
        var parent = [Int](repeating: -1, count: values.count)
        for (i, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
            }
            if low > 0 { parent[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var result: Set<Int> = []
        var k = tails.last ?? -1
        while k >= 0 {
            result.insert(k)
            k = parent[k]
        }
        return result
    }
}

extension ResultsChange {
    /// Applies this change to `previous` by the documented convention; the outcome equals
    /// ``results`` when `previous` is the list the earlier changes built (every change
    /// applied in order, starting from `[]`). A list this change does not fit (a position
    /// past its end, or a different length than the change was computed against) throws
    /// `.misuse` naming both, and nothing is changed.
    public func applied<C: RangeReplaceableCollection>(to previous: C, _ transform: (Record) -> C.Element) throws -> C where C.Index == Int {
        let expected = results.count - inserted.count + deleted.count
        guard previous.count == expected else {
            throw ReservoirError(.misuse, "ResultsChange.applied(to:): the list has \(previous.count) items, but this change was computed against \(expected); apply every change in order to the list the previous ones built")
        }
        var list = previous
        for old in (deleted + moved.map { $0.old }).sorted(by: >) {
            guard old >= 0, old < list.count else {
                throw ReservoirError(.misuse, "ResultsChange.applied(to:): position \(old) is outside the \(previous.count)-item list")
            }
            list.remove(at: list.index(list.startIndex, offsetBy: old))
        }
        for new in (inserted + moved.map { $0.new }).sorted() {
            guard new >= 0, new <= list.count, new < results.count else {
                throw ReservoirError(.misuse, "ResultsChange.applied(to:): insertion position \(new) does not fit a list of \(list.count) items and results of \(results.count)")
            }
            list.insert(transform(results[new]), at: list.index(list.startIndex, offsetBy: new))
        }
        for update in updated {
            guard update.new >= 0, update.new < list.count, update.new < results.count else {
                throw ReservoirError(.misuse, "ResultsChange.applied(to:): updated position \(update.new) is outside the \(list.count)-item list")
            }
            let index = list.index(list.startIndex, offsetBy: update.new)
            list.replaceSubrange(index...index, with: CollectionOfOne(transform(results[update.new])))
        }
        return list
    }
}
