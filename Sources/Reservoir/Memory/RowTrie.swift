/// Rows by integer id in a persistent radix trie: how the memory backend stores the rows of
/// integer ids (see Docs/Design/Memory.md).
///
/// The id's bits, five at a time from the top level down, pick a child in each 32-way branch,
/// so a lookup hashes nothing and walks `height` branches (2 at 100,000 dense ids; the few
/// branches stay cache-hot) to one leaf. A leaf holds 32 consecutive ids' rows with their values
/// side by side in one array (`width` values a slot), not one heap array per row, so a point
/// read's memory traffic is mostly one region. A copy of the trie is O(1) and shares every node;
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
            root = height == 0 ? Leaf.make(width: row.count) as AnyObject : Branch() as AnyObject
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
        if level == 0 {
            if node == nil {
                node = Leaf.make(width: row.count)
            } else if !isKnownUniquelyReferenced(&node) {
                let leaf = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self)
                node = leaf.copy(width: max(leaf.width, row.count))
            } else if unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self).width < row.count {
                let leaf = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self)
                node = leaf.copy(width: row.count)
            }
            return unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self).set(row, at: slot(key, level: 0))
        }
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
        guard leaf(for: id)?.contains(Self.slot(key, level: 0)) == true else { return nil }
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
            if !isKnownUniquelyReferenced(&node) {
                let shared = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self)
                node = shared.copy(width: shared.width)
            }
            let leaf = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self)
            let old = leaf.remove(at: slot(key, level: 0))
            if leaf.present == 0 { node = nil }
            return old
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
        guard let root else { return }
        try Self.forEach(root, level: height, prefix: 0, body)
    }

    private static func forEach(_ node: AnyObject, level: Int, prefix: UInt64, _ body: (Int64, Row) throws -> Void) rethrows {
        if level == 0 {
            let leaf = unsafeDowncast(node, to: Leaf.self)
            var present = leaf.present
            while present != 0 {
                let position = present.trailingZeroBitCount
                present &= present &- 1
                if let row = leaf.row(at: position) {
                    try body(Int64(bitPattern: prefix | UInt64(position)), row)
                }
            }
            return
        }
        let branch = unsafeDowncast(node, to: Branch.self)
        let shift = UInt64(level &* bits)
        for (position, child) in branch.children.enumerated() {
            guard let child else { continue }
            try forEach(child, level: level - 1, prefix: prefix | (UInt64(position) << shift), body)
        }
    }
}

// MARK: - Nodes

extension RowTrie {
    /// An inner node: `fanout` children, each a `Branch` or (one level above the leaves) a `Leaf`.
    /// Shared nodes are never changed (a change copies them first).
    final class Branch: @unchecked Sendable {
        var children: ContiguousArray<AnyObject?>
        /// The non-nil children.
        var occupied = 0

        init() { children = ContiguousArray(repeating: nil, count: RowTrie.fanout) }

        init(copying other: Branch) {
            children = other.children
            occupied = other.occupied
        }

        func copy() -> Branch { Branch(copying: self) }
    }

    /// What a leaf holds besides its values: the slots in use, the values a slot has room for,
    /// and the slots' column names (rows of one type share one array, so `columns` is usually
    /// every slot's, and `otherColumns` is empty).
    struct LeafHeader {
        var present: UInt64 = 0
        var width: Int
        var columns: [String] = []
        var otherColumns: [Int: [String]] = [:]
    }

    /// The rows of `fanout` consecutive ids, in one allocation: the header, then every slot's
    /// values side by side, slot `s`'s `width` values at `s * width` (a narrower row's spare
    /// values are null). All `fanout * width` values are always initialized. A row wider than
    /// `width` needs a wider leaf (``copy(width:)``). Shared leaves are never changed (a change
    /// copies them first).
    final class Leaf: ManagedBuffer<LeafHeader, Value> {
        static func make(width: Int) -> Leaf {
            let leaf = unsafeDowncast(create(minimumCapacity: RowTrie.fanout * width) { _ in LeafHeader(width: width) }, to: Leaf.self)
            leaf.withUnsafeMutablePointerToElements { $0.initialize(repeating: .null, count: RowTrie.fanout * width) }
            return leaf
        }

        deinit {
            withUnsafeMutablePointers { header, values in
                _ = values.deinitialize(count: RowTrie.fanout * header.pointee.width)
            }
        }

        var present: UInt64 { withUnsafeMutablePointerToHeader { $0.pointee.present } }
        var width: Int { withUnsafeMutablePointerToHeader { $0.pointee.width } }

        /// A copy with room for `newWidth` values a slot (at least the current width).
        func copy(width newWidth: Int) -> Leaf {
            let copy = Leaf.make(width: newWidth)
            withUnsafeMutablePointers { header, values in
                copy.withUnsafeMutablePointers { target, targetValues in
                    let width = header.pointee.width
                    target.pointee.present = header.pointee.present
                    target.pointee.columns = header.pointee.columns
                    target.pointee.otherColumns = header.pointee.otherColumns
                    if width == newWidth {
                        targetValues.update(from: values, count: RowTrie.fanout * width)
                    } else {
                        for slot in 0..<RowTrie.fanout {
                            (targetValues + slot * newWidth).update(from: values + slot * width, count: width)
                        }
                    }
                }
            }
            return copy
        }

        @inline(__always)
        func contains(_ slot: Int) -> Bool { present & (1 &<< UInt64(slot)) != 0 }

        /// The row in `slot`, built from the slot's values (one array allocation).
        @inline(__always)
        func row(at slot: Int) -> Row? {
            withUnsafeMutablePointers { header, values in
                guard header.pointee.present & (1 &<< UInt64(slot)) != 0 else { return nil }
                let names = header.pointee.otherColumns.isEmpty
                    ? header.pointee.columns : header.pointee.otherColumns[slot] ?? header.pointee.columns
                let count = names.count
                let start = values + slot &* header.pointee.width
                let copied = [Value](unsafeUninitializedCapacity: count) { buffer, initialized in
                    buffer.baseAddress?.initialize(from: start, count: count)
                    initialized = count
                }
                return Row(columns: names, values: copied)
            }
        }

        /// Puts `new` in `slot`, which has room for it (`new.count <= width`); returns the row
        /// it replaced.
        func set(_ new: Row, at slot: Int) -> Row? {
            let old = row(at: slot)
            withUnsafeMutablePointers { header, values in
                let width = header.pointee.width
                let start = values + slot &* width
                new.values.withUnsafeBufferPointer { source in
                    for index in 0..<width { start[index] = index < source.count ? source[index] : .null }
                }
                let bit: UInt64 = 1 &<< UInt64(slot)
                if header.pointee.present & ~bit == 0 {
                    // Alone in the leaf: its columns become the leaf's.
                    header.pointee.columns = new.columns
                    header.pointee.otherColumns = [:]
                } else if new.columns == header.pointee.columns {
                    if !header.pointee.otherColumns.isEmpty { header.pointee.otherColumns[slot] = nil }
                } else {
                    header.pointee.otherColumns[slot] = new.columns
                    let sharing = (header.pointee.present | bit).nonzeroBitCount - header.pointee.otherColumns.count
                    if sharing == 0 {
                        // No slot uses `columns` any more (a migration re-put every row): the new
                        // columns become the leaf's, so reads skip the look-up again.
                        header.pointee.columns = new.columns
                        header.pointee.otherColumns = header.pointee.otherColumns.filter { $0.value != new.columns }
                    }
                }
                header.pointee.present |= bit
            }
            return old
        }

        /// Empties `slot`; returns the row it held.
        func remove(at slot: Int) -> Row? {
            guard let old = row(at: slot) else { return nil }
            withUnsafeMutablePointers { header, values in
                let width = header.pointee.width
                let start = values + slot &* width
                for index in 0..<width { start[index] = .null }
                header.pointee.present &= ~(1 &<< UInt64(slot))
                if !header.pointee.otherColumns.isEmpty { header.pointee.otherColumns[slot] = nil }
            }
            return old
        }
    }
}
