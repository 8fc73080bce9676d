import HashTreeCollections

/// A memory table's rows by id: integer ids (and reals equal to one, the same key under
/// `Value`'s equality) in a ``RowTrie``, every other id (text, blob, other reals, null) in a
/// persistent hash trie. Both copy in O(1) and change O(log n) nodes, so a snapshot of the
/// table is a copy that later writes never disturb.
struct TableRows: Sendable {
    private var integers = RowTrie()
    private var others: TreeDictionary<Value, Row> = [:]

    /// The integer `id` is equal to, if any: `.integer(1)` and `.real(1.0)` are one key.
    @inline(__always)
    static func integerKey(_ id: Value) -> Int64? {
        switch id {
        case let .integer(integer): integer
        case let .real(real): Int64(exactly: real)
        default: nil
        }
    }

    var isEmpty: Bool { integers.isEmpty && others.isEmpty }

    var count: Int { integers.count + others.count }

    /// The row stored under an id equal to `id`. Inlined, as ``locate(_:)`` is.
    @inline(__always)
    subscript(id: Value) -> Row? {
        locate(id)?.row
    }

    /// Whether a row is stored under an id equal to `id` (without building it). Inlined, as
    /// ``locate(_:)`` is.
    @inline(__always)
    func contains(_ id: Value) -> Bool {
        if let key = Self.integerKey(id) { return integers.contains(key) }
        return others[id] != nil
    }

    /// Where a row is: a hash trie's row, or a slot of a trie leaf (which no write changes once
    /// it is shared) to build the row from.
    enum Location {
        case stored(Row)
        case slot(RowTrie.Leaf, Int)

        /// The row, or nil when the slot is empty.
        var row: Row? {
            switch self {
            case let .stored(row): row
            case let .slot(leaf, slot): leaf.row(at: slot)
            }
        }

        /// Calls `body` with the row and returns true, or returns false when the slot is empty.
        /// A slot's row is decoded into `lent` when there is one (nil: `body` gets a row of its
        /// own), refilling its values in place; `lent` is nil while `body` runs, so the row is
        /// uniquely referenced while it is refilled and a nested read cannot take it.
        func withRow(lending lent: inout Row?, _ body: (Row) throws -> Void) rethrows -> Bool {
            switch self {
            case let .stored(row):
                try body(row)
                return true
            case let .slot(leaf, slot):
                guard var row = lent else {
                    guard let row = leaf.row(at: slot) else { return false }
                    try body(row)
                    return true
                }
                lent = nil
                defer { lent = row }
                guard leaf.fill(&row, from: slot) else { return false }
                try body(row)
                return true
            }
        }
    }

    /// Where the row stored under an id equal to `id` is, or may be; nil when it is not.
    /// Inlined: called, it had its caller copy both tries out of the table and destroy the
    /// copy (about 200 instructions a point read).
    @inline(__always)
    func locate(_ id: Value) -> Location? {
        if let key = Self.integerKey(id) {
            guard let leaf = integers.leaf(for: key) else { return nil }
            return .slot(leaf, RowTrie.leafSlot(key))
        }
        return others[id].map(Location.stored)
    }

    /// Stores `row` under `id`; returns the row it replaced.
    @discardableResult
    mutating func updateValue(_ row: Row, forKey id: Value) -> Row? {
        if let key = Self.integerKey(id) { return integers.updateValue(row, forKey: key) }
        return others.updateValue(row, forKey: id)
    }

    /// Removes the row stored under `id`; returns it.
    @discardableResult
    mutating func removeValue(forKey id: Value) -> Row? {
        if let key = Self.integerKey(id) { return integers.removeValue(forKey: key) }
        return others.removeValue(forKey: id)
    }

    /// Calls `body` with every id and row: integer ids first (see ``RowTrie/forEach(_:)``), then
    /// the others in the hash trie's order. No caller depends on the order (every query sorts
    /// by id last).
    func forEach(_ body: (Value, Row) throws -> Void) rethrows {
        try integers.forEach { try body(.integer($0), $1) }
        for (id, row) in others { try body(id, row) }
    }

    /// Calls `body` with where every row is, in ``forEach(_:)``'s order, decoding none.
    func forEachLocation(_ body: (Location) throws -> Void) rethrows {
        try integers.forEachSlot { _, leaf, slot in try body(.slot(leaf, slot)) }
        for (_, row) in others { try body(.stored(row)) }
    }

    /// Every row, in ``forEach(_:)``'s order.
    var values: [Row] {
        var rows: [Row] = []
        rows.reserveCapacity(count)
        forEach { rows.append($1) }
        return rows
    }
}
