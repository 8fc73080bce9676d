/// Rows by integer id in a persistent radix trie: how the memory backend stores the rows of
/// integer ids (see Docs/Design/Memory.md).
///
/// The id's bits, five at a time from the top level down, pick a child in each 32-way branch,
/// so a lookup hashes nothing and walks `height` branches (2 at 100,000 dense ids; the few
/// branches stay cache-hot) to one leaf. A leaf holds 32 consecutive ids' rows encoded side by
/// side in one allocation (``Leaf``), not one heap array per row, so a point read's memory
/// traffic is mostly one region. A copy of the trie is O(1) and shares every node;
/// a change copies the nodes on its path that are shared (`isKnownUniquelyReferenced`), so a
/// snapshot taken before never changes and a write transaction copies O(height) nodes.
/// Negative ids (as unsigned, above every positive one) only make the trie taller.
/// `@unchecked Sendable`: its nodes are `Branch` and `Leaf`, which are never changed once shared.
struct RowTrie: @unchecked Sendable {
    static let bits = 5
    static let fanout = 1 << bits
    static let mask = UInt64(fanout - 1)

    /// A `Leaf` when `height` is 0, else a `Branch`; nil when empty.
    private var root: AnyObject?
    /// The branch levels above the leaves.
    private var height = 0
    /// The number of rows.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The slot index of `key` at `level` (0: within its leaf).
    @inline(__always)
    private static func slot(_ key: UInt64, level: Int) -> Int {
        let shift = level &* bits
        return shift >= 64 ? 0 : Int(truncatingIfNeeded: (key >> UInt64(shift)) & mask)
    }

    /// Whether a trie of `height` branch levels reaches `key`.
    @inline(__always)
    private static func reaches(_ key: UInt64, height: Int) -> Bool {
        let shift = (height &+ 1) &* bits
        return shift >= 64 || key >> UInt64(shift) == 0
    }

    /// The slot `id`'s row has in its leaf.
    @inline(__always)
    static func leafSlot(_ id: Int64) -> Int { slot(UInt64(bitPattern: id), level: 0) }

    /// The leaf that would hold `id`, if there is one.
    @inline(__always)
    func leaf(for id: Int64) -> Leaf? {
        let key = UInt64(bitPattern: id)
        guard var node = root, Self.reaches(key, height: height) else { return nil }
        var level = height
        while level > 0 {
            let branch = unsafeDowncast(node, to: Branch.self)
            guard let child = branch.children[Self.slot(key, level: level)] else { return nil }
            node = child
            level &-= 1
        }
        return unsafeDowncast(node, to: Leaf.self)
    }

    /// Whether a row is stored under `id` (a function, so no reference to the leaf outlives it).
    func contains(_ id: Int64) -> Bool {
        guard let leaf = leaf(for: id) else { return false }
        return leaf.present & (1 &<< UInt64(Self.leafSlot(id))) != 0
    }

    /// The row stored under `id`, or nil.
    func row(_ id: Int64) -> Row? {
        leaf(for: id)?.row(at: Self.slot(UInt64(bitPattern: id), level: 0))
    }

    /// Stores `row` under `id`; returns the row it replaced.
    @discardableResult
    mutating func updateValue(_ row: Row, forKey id: Int64) -> Row? {
        let key = UInt64(bitPattern: id)
        if root == nil {
            height = 0
            while !Self.reaches(key, height: height) { height += 1 }
            root = height == 0 ? nil : Branch() as AnyObject
        }
        while !Self.reaches(key, height: height) {
            // Taller: the old root becomes the first child of a new one.
            let branch = Branch()
            branch.children[0] = root
            branch.occupied = 1
            root = branch
            height += 1
        }
        let old = Self.update(&root, level: height, key: key, row: row)
        if old == nil { count += 1 }
        return old
    }

    private static func update(_ node: inout AnyObject?, level: Int, key: UInt64, row: Row) -> Row? {
        if level == 0 { return Leaf.put(row, at: slot(key, level: 0), in: &node) }
        if node == nil {
            node = Branch()
        } else if !isKnownUniquelyReferenced(&node) {
            node = unsafeDowncast(node.unsafelyUnwrapped, to: Branch.self).copy()
        }
        let branch = unsafeDowncast(node.unsafelyUnwrapped, to: Branch.self)
        let position = slot(key, level: level)
        if branch.children[position] == nil { branch.occupied += 1 }
        return update(&branch.children[position], level: level - 1, key: key, row: row)
    }

    /// Removes the row stored under `id`; returns it.
    @discardableResult
    mutating func removeValue(forKey id: Int64) -> Row? {
        let key = UInt64(bitPattern: id)
        guard contains(id) else { return nil }
        let old = Self.remove(&root, level: height, key: key)
        count -= 1
        if count == 0 {
            root = nil
            height = 0
        }
        return old
    }

    /// Removes `key` below `node`, which holds it; empties drop out of their parents.
    private static func remove(_ node: inout AnyObject?, level: Int, key: UInt64) -> Row? {
        if level == 0 {
            return Leaf.remove(at: slot(key, level: 0), in: &node)
        }
        if !isKnownUniquelyReferenced(&node) {
            node = unsafeDowncast(node.unsafelyUnwrapped, to: Branch.self).copy()
        }
        let branch = unsafeDowncast(node.unsafelyUnwrapped, to: Branch.self)
        let position = slot(key, level: level)
        let old = remove(&branch.children[position], level: level - 1, key: key)
        if branch.children[position] == nil {
            branch.occupied -= 1
            if branch.occupied == 0 { node = nil }
        }
        return old
    }

    /// Calls `body` with every id and row, in the order of the ids' unsigned bit patterns
    /// (non-negative ids ascending, then negative ones ascending).
    func forEach(_ body: (Int64, Row) throws -> Void) rethrows {
        try forEachSlot { id, leaf, slot in
            if let row = leaf.row(at: slot) { try body(id, row) }
        }
    }

    /// Calls `body` with every id, its leaf and its slot in the leaf, in ``forEach(_:)``'s
    /// order, decoding nothing.
    func forEachSlot(_ body: (Int64, Leaf, Int) throws -> Void) rethrows {
        guard let root else { return }
        try Self.forEachSlot(root, level: height, prefix: 0, body)
    }

    private static func forEachSlot(_ node: AnyObject, level: Int, prefix: UInt64, _ body: (Int64, Leaf, Int) throws -> Void) rethrows {
        if level == 0 {
            let leaf = unsafeDowncast(node, to: Leaf.self)
            var present = leaf.present
            while present != 0 {
                let position = present.trailingZeroBitCount
                present &= present &- 1
                try body(Int64(bitPattern: prefix | UInt64(position)), leaf, position)
            }
            return
        }
        let branch = unsafeDowncast(node, to: Branch.self)
        let shift = UInt64(level &* bits)
        for (position, child) in branch.children.enumerated() {
            guard let child else { continue }
            try forEachSlot(child, level: level - 1, prefix: prefix | (UInt64(position) << shift), body)
        }
    }
}

// MARK: - Nodes

extension RowTrie {
    /// An inner node: `fanout` children, each a `Branch` or (one level above the leaves) a `Leaf`.
    /// Shared nodes are never changed (a change copies them first).
    final class Branch: @unchecked Sendable {
        // Unchecked: a shared branch is only read, and only its one owner writes an unshared one.
        @exclusivity(unchecked) var children: ContiguousArray<AnyObject?>
        /// The non-nil children.
        var occupied = 0

        init() { children = ContiguousArray(repeating: nil, count: RowTrie.fanout) }

        init(copying other: Branch) {
            children = other.children
            occupied = other.occupied
        }

        func copy() -> Branch { Branch(copying: self) }
    }
}
