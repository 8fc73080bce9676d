/// The range-routed observers of one column, answering "whose range holds this value?" in
/// time proportional to the answer (times log n), not to how many observers there are.
///
/// The ranges are kept sorted by lower end, so the ranges whose lower end admits a value
/// are a prefix; a max-tree over their upper ends then descends only into parts of that
/// prefix where some upper end admits the value too. The sorted form is rebuilt on the
/// first lookup after observers come or go (O(n log n) once per burst of subscribing, not
/// per observer). A class so the index's lookups, which do not change what they answer,
/// can still build it lazily.
///
/// Not thread-safe: the hub guards it with its lock.
final class RangeRoutes {
    private var ranges: [UInt64: ValueRange] = [:]
    /// `ranges` sorted by lower end (most admitting first); valid when `isBuilt`.
    private var sorted: [(token: UInt64, range: ValueRange)] = []
    /// A max-tree over `sorted`'s upper ends, as an implicit binary tree (node 1 the root,
    /// node n's children 2n and 2n+1, leaves from `leafBase`): each node the index in
    /// `sorted` of its subtree's most admitting upper end, -1 for an empty leaf.
    private var maxUpper: [Int] = []
    private var leafBase = 1
    private var isBuilt = true

    var isEmpty: Bool { ranges.isEmpty }

    func insert(_ token: UInt64, _ range: ValueRange) {
        ranges[token] = range
        isBuilt = false
    }

    func remove(_ token: UInt64) {
        if ranges.removeValue(forKey: token) != nil { isBuilt = false }
    }

    /// Calls `body` with each observer whose range holds `value`.
    func forEachContaining(_ value: Value, _ body: (UInt64) -> Void) {
        guard !value.isNull, !ranges.isEmpty else { return }
        if !isBuilt { build() }
        // The prefix of ranges whose lower end admits `value`.
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if ValueRange.lowerAdmits(sorted[middle].range.lower, value) { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return }
        visit(node: 1, from: 0, to: leafBase, below: low, value, body)
    }

    /// Reports the ranges under `node` (covering `sorted[from..<to]`), before `limit`, whose
    /// upper end admits `value`; skips a subtree whose most admitting upper end does not.
    private func visit(node: Int, from: Int, to: Int, below limit: Int, _ value: Value, _ body: (UInt64) -> Void) {
        guard from < limit else { return }
        let best = maxUpper[node]
        guard best >= 0, ValueRange.upperAdmits(sorted[best].range.upper, value) else { return }
        if node >= leafBase {
            body(sorted[best].token)
            return
        }
        let middle = (from + to) / 2
        visit(node: 2 * node, from: from, to: middle, below: limit, value, body)
        visit(node: 2 * node + 1, from: middle, to: to, below: limit, value, body)
    }

    private func build() {
        sorted = ranges.map { (token: $0.key, range: $0.value) }
        // Ties broken by token, so lookups report observers in a stable order.
        sorted.sort { a, b in
            let order = ValueRange.compareLower(a.range.lower, b.range.lower)
            return order != 0 ? order < 0 : a.token < b.token
        }
        leafBase = 1
        while leafBase < sorted.count { leafBase *= 2 }
        maxUpper = [Int](repeating: -1, count: 2 * leafBase)
        for index in sorted.indices { maxUpper[leafBase + index] = index }
        var node = leafBase - 1
        while node >= 1 {
            let left = maxUpper[2 * node]
            let right = maxUpper[2 * node + 1]
            if left < 0 || right < 0 {
                maxUpper[node] = max(left, right)
            } else {
                maxUpper[node] = ValueRange.compareUpper(sorted[left].range.upper, sorted[right].range.upper) >= 0 ? left : right
            }
            node -= 1
        }
        isBuilt = true
    }
}
