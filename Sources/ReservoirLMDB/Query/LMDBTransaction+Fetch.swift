import CLMDB
import Foundation
import Reservoir

/// Answering queries: narrow with an index when the predicate allows, otherwise scan
/// the entity in id order; then filter with ``QueryEvaluator``, sort and window.
extension LMDBTransaction {
    /// A range of encoded values in an index.
    struct KeyRange {
        var lower: [UInt8]
        var lowerInclusive = true
        /// nil: up to the last value (before the overlong section).
        var upper: [UInt8]?
        var upperInclusive = true
        /// When set, only values whose encoding starts with these bytes.
        var prefix: [UInt8]?

        static func point(_ value: Value) -> KeyRange {
            let bytes = KeyEncoding.encode(value)
            return KeyRange(lower: bytes, upper: bytes)
        }
    }

    /// How a predicate can be answered from indexes.
    indirect enum Access {
        /// Nothing matches.
        case nothing
        /// Candidates are the records whose `column` value falls in one of the ranges.
        case ranges(column: String, [KeyRange], cost: Int)
        /// Candidates are the union of each part's candidates.
        case union([Access])

        var cost: Int {
            switch self {
            case .nothing: 0
            case let .ranges(_, _, cost): cost
            case let .union(parts): parts.map(\.cost).reduce(0, +) + 1
            }
        }
    }

    /// The index access for `predicate`, or nil when it needs a full scan.
    static func access(for predicate: RowPredicate, indexed: Set<String>) -> Access? {
        switch predicate {
        case .constant(false):
            return .nothing
        case let .compare(column, op, value):
            guard indexed.contains(column) else { return nil }
            switch op {
            case .equal:
                return .ranges(column: column, [.point(value)], cost: 1)
            case .notEqual:
                return nil
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                // Ordering comparisons never match null.
                if value.isNull { return .nothing }
                let bytes = KeyEncoding.encode(value)
                var range = KeyRange(lower: KeyEncoding.firstNonNull, upper: nil)
                switch op {
                case .less: range.upper = bytes; range.upperInclusive = false
                case .lessOrEqual: range.upper = bytes
                case .greater: range.lower = bytes; range.lowerInclusive = false
                default: range.lower = bytes
                }
                return .ranges(column: column, [range], cost: 10)
            }
        case let .isIn(column, values):
            guard indexed.contains(column) else { return nil }
            if values.isEmpty { return .nothing }
            return .ranges(column: column, values.map(KeyRange.point), cost: 1 + values.count)
        case let .hasPrefix(column, prefix):
            guard indexed.contains(column) else { return nil }
            let bytes = KeyEncoding.textPrefix(prefix)
            return .ranges(column: column, [KeyRange(lower: bytes, upper: nil, prefix: bytes)], cost: 5)
        case let .and(parts):
            let accesses = parts.compactMap { access(for: $0, indexed: indexed) }
            if accesses.contains(where: { if case .nothing = $0 { return true } else { return false } }) { return .nothing }
            return accesses.min { $0.cost < $1.cost }
        case let .or(parts):
            var accesses: [Access] = []
            for part in parts {
                guard let access = access(for: part, indexed: indexed) else { return nil }
                if case .nothing = access { continue }
                accesses.append(access)
            }
            if accesses.isEmpty { return .nothing }
            return accesses.count == 1 ? accesses[0] : .union(accesses)
        case .constant(true), .contains, .not:
            return nil
        }
    }

    /// The candidates `access` selects: their row keys, as bytes inside the index's pages
    /// (valid while the transaction neither writes nor ends), in key order (the contract's id
    /// order), each once. `inOrder` is false when they may not be: more than one range or
    /// part, a range over more than one value, or an overlong entry; ``sortKeys(_:)`` then
    /// orders them. `overlong` is set when an overlong entry was taken, which matches nothing
    /// in particular and must be checked against the predicate.
    private struct Candidates {
        var keys: [UnsafeRawBufferPointer] = []
        var inOrder = true
        var overlong = false

        /// Puts the keys in key order and drops repeats, unless they are in order already.
        mutating func sortKeys() {
            guard !inOrder else { return }
            keys.sort { compareBytes($0, $1) < 0 }
            var kept = 0
            for key in keys where kept == 0 || compareBytes(keys[kept &- 1], key) != 0 {
                keys[kept] = key
                kept &+= 1
            }
            keys.removeSubrange(kept...)
            inOrder = true
        }
    }

    private func candidates(_ access: Access, entity: String, into found: inout Candidates) throws {
        switch access {
        case .nothing:
            return
        case let .union(parts):
            found.inOrder = false
            for part in parts { try candidates(part, entity: entity, into: &found) }
        case let .ranges(column, ranges, _):
            guard let index = try indexDatabase(entity, column) else { return }
            if ranges.count > 1 { found.inOrder = false }
            for range in ranges {
                // One value's entries are that value's encoding then the row key, in row-key order.
                if range.prefix != nil || range.upper != range.lower || !range.lowerInclusive || !range.upperInclusive {
                    found.inOrder = false
                }
                try range.lower.withUnsafeBytes { lower in
                    try scan(index, from: range.lower) { key, _ in
                        guard key.first != KeyEncoding.overlongTag, let length = KeyEncoding.length(of: key) else { return false }
                        let value = UnsafeRawBufferPointer(rebasing: key[0..<length])
                        if let prefix = range.prefix {
                            guard value.starts(with: prefix) else { return false }
                        }
                        if !range.lowerInclusive, compareBytes(value, lower) == 0 { return true }
                        if let upper = range.upper {
                            let order = upper.withUnsafeBytes { compareBytes(value, $0) }
                            if order > 0 || (order == 0 && !range.upperInclusive) { return false }
                        }
                        found.keys.append(UnsafeRawBufferPointer(rebasing: key[length...]))
                        return true
                    }
                }
            }
            // Entries too long for a key are kept apart; they are always candidates.
            try scan(index, from: [KeyEncoding.overlongTag]) { key, _ in
                found.keys.append(UnsafeRawBufferPointer(rebasing: key.dropFirst()))
                found.inOrder = false
                found.overlong = true
                return true
            }
        }
    }

    /// Whether every candidate of a not-overlong index entry matches `predicate`: equality
    /// (or `in`) on the indexed column, since equal values encode identically and unequal
    /// ones differently (``KeyEncoding``), so the index's point ranges hold exactly the matches.
    private static func indexAnswersExactly(_ predicate: RowPredicate) -> Bool {
        switch predicate {
        case .compare(_, .equal, _), .isIn: true
        default: false
        }
    }

    // MARK: - ReadTransaction

    func fetch(_ query: Query) throws -> [Row] {
        var rows: [Row] = []
        try fetch(query, expecting: { rows.reserveCapacity($0) }) { rows.append($0) }
        return rows
    }

    func fetch(_ query: Query, each body: (Row) throws -> Void) throws {
        try fetch(query, expecting: { _ in }, each: body)
    }

    /// Finds the matching rows as byte ranges in the snapshot's pages, orders and windows
    /// them by reading only the sort columns (so `expecting` learns their number), then
    /// decodes just the rows in the window, each into the same `Row`, refilled in place.
    func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        _ = try liveTransaction()  // an ended transaction is refused before any cache answers
        let entity = query.entity.name
        let window = try LMDBErrors.convert(path: path) { () -> [StoredRow] in
            func window<C: Collection<Int>>(_ order: C) -> Range<Int> {
                let start = min(query.offset, order.count)
                return start..<(query.limit.map { start + min($0, order.count - start) } ?? order.count)
            }
            if let ranged = try idRangeScan(query) {
                return ranged
            }
            if let ordered = try orderedIndexScan(query) {
                return Array(ordered[window(ordered.indices)])
            }
            let (stored, inIDOrder) = try matching(query)
            let order = try sortOrder(stored, query, inIDOrder: inIDOrder)
            // Gathered into one array so the loop below reads it in order; the gather's
            // scattered loads are independent, so the CPU overlaps their cache misses.
            return order[window(order)].map { stored[$0] }
        }
        expecting(window.count)
        var row = Row()
        let renames = window.isEmpty ? nil : try renameHistory(entity)
        var reader = StoredRowDecoder()
        swap(&reader, &self.rowCoding.reader)
        defer { swap(&reader, &self.rowCoding.reader) }
        // A plain loop over the array, not a closure: `row` stays a local that `body` borrows,
        // where a variable captured by a closure would be copied (two retains and releases a row).
        for position in window.indices {
            // Rows in sort order lie scattered over the map: start loading one a few ahead.
            if position &+ 4 < window.count { clmdb_prefetch(window[position &+ 4].bytes.baseAddress) }
            let stored = window[position]
            guard try reader.decode(stored.bytes, into: &row, renames: renames, layouts: layout) else {
                throw corruptRow(stored.bytes, entity: entity, key: stored.key)
            }
            try body(row)
        }
    }

    func count(_ query: Query) throws -> Int {
        _ = try liveTransaction()  // an ended transaction is refused before any cache answers
        return try LMDBErrors.convert(path: path) {
            let entity = query.entity.name
            if query.predicate == nil {
                guard let rows = try rowsDatabase(entity) else { return 0 }
                return windowed(try entryCount(rows), query)
            }
            return windowed(try matching(query).rows.count, query)
        }
    }

    private func windowed(_ count: Int, _ query: Query) -> Int {
        let available = max(0, count - query.offset)
        return query.limit.map { min($0, available) } ?? available
    }

    /// A stored row as LMDB returned it: its key and value bytes inside the snapshot's
    /// pages, valid until the transaction ends or writes.
    struct StoredRow {
        let key: UnsafeRawBufferPointer
        let bytes: UnsafeRawBufferPointer
    }

    /// The positions of `rows` in the query's order, reading only the sort columns.
    private func sortOrder(_ rows: [StoredRow], _ query: Query, inIDOrder: Bool) throws -> [Int] {
        let entity = query.entity.name
        let renames = try renameHistory(entity)
        // Made once: `layouts: layout` in the loop would make the closure, retaining and
        // releasing the transaction, for every row.
        let layouts: (UInt32) throws -> RowLayout? = layout
        return try RowSort.order(count: rows.count, by: query.sort, idColumn: query.entity.idColumn, inIDOrder: inIDOrder) { term in
            var reader = FieldReader(column: query.sort[term].column, renames: renames)
            return try rows.withUnsafeBufferPointer { rows in
                var fields: [StoredField] = []
                fields.reserveCapacity(rows.count)
                for row in rows {
                    guard let field = try reader.field(in: row.bytes, layouts: layouts) else {
                        throw corruptRow(row.bytes, entity: entity, key: row.key)
                    }
                    fields.append(field)
                }
                return fields
            }
        }
    }

    /// Decodes stored rows into one scratch row to test them against a predicate.
    private struct RowFilter {
        let predicate: RowPredicate
        let entity: String
        let renames: RenameHistory?
        var row = Row()
        var reader: StoredRowDecoder

        mutating func matches(_ key: UnsafeRawBufferPointer, _ bytes: UnsafeRawBufferPointer, in transaction: LMDBTransaction) throws -> Bool {
            guard try reader.decode(bytes, into: &row, renames: renames, layouts: transaction.layout) else {
                throw transaction.corruptRow(bytes, entity: entity, key: key)
            }
            return QueryEvaluator.matches(predicate, row)
        }
    }

    /// Runs `body` with a filter for `predicate` (nil when there is none) that borrows the
    /// transaction's row reader: a local copy, since the class property would be checked
    /// for exclusive access per row.
    private func withFilter<R>(_ predicate: RowPredicate?, entity: String, _ body: (inout RowFilter?) throws -> R) throws -> R {
        let renames = predicate == nil ? nil : try renameHistory(entity)
        var filter = predicate.map { RowFilter(predicate: $0, entity: entity, renames: renames, reader: StoredRowDecoder()) }
        if filter != nil { swap(&filter!.reader, &rowCoding.reader) }
        defer { if filter != nil { swap(&filter!.reader, &rowCoding.reader) } }
        return try body(&filter)
    }

    /// The stored rows matching the query's predicate, unsorted and unwindowed, narrowed by
    /// an index when the predicate allows; `inIDOrder` when they come from a scan of the row
    /// database, in id order. Only a predicate makes rows decode here.
    private func matching(_ query: Query) throws -> (rows: [StoredRow], inIDOrder: Bool) {
        let entity = query.entity.name
        guard let rowsDB = try rowsDatabase(entity) else { return ([], true) }
        var stored: [StoredRow] = []
        if let predicate = query.predicate {
            let indexed = Set(try storedDescription(entity)?.indexes ?? [])
            if let access = Self.access(for: predicate, indexed: indexed) {
                var found = Candidates()
                // Room for a typical index read at once: grown by doubling from empty, a read of
                // 100 keys reallocated eight times (about 70 instructions a row).
                found.keys.reserveCapacity(128)
                try candidates(access, entity: entity, into: &found)
                found.sortKeys()
                stored.reserveCapacity(found.keys.count)
                // Looked up in key order: the rows come out in id order, and the cursor moves forwards.
                let check = found.overlong || !Self.indexAnswersExactly(predicate) ? predicate : nil
                try withFilter(check, entity: entity) { filter in
                    try lookUp(rowsDB, found.keys) { key, bytes in
                        if try filter?.matches(key, bytes, in: self) ?? true { stored.append(StoredRow(key: key, bytes: bytes)) }
                    }
                }
                return (stored, true)
            }
        } else {
            stored.reserveCapacity(try entryCount(rowsDB))
        }
        // Keys are in the contract's order, so a cursor scan is in id order.
        try withFilter(query.predicate, entity: entity) { filter in
            try scan(rowsDB) { key, bytes in
                if try filter?.matches(key, bytes, in: self) ?? true { stored.append(StoredRow(key: key, bytes: bytes)) }
                return true
            }
        }
        return (stored, true)
    }

    /// For a query reading rows in id order from a lower bound on the id (`id > x`, `id >= x`,
    /// or none) with a limit and no offset: the rows read along the row database from the
    /// bound, stopping at the limit, so a page (a migration reads its entity in pages of
    /// `id > last`) costs its own size, not the entity's. Nil when the query is not of that shape.
    private func idRangeScan(_ query: Query) throws -> [StoredRow]? {
        let idColumn = query.entity.idColumn
        guard let limit = query.limit, query.offset == 0,
              query.sort.allSatisfy({ $0.column == idColumn && $0.ascending }) else { return nil }
        var start: [UInt8]?
        var exclusive = false
        switch query.predicate {
        case nil:
            break
        case let .compare(column, op, value)? where column == idColumn && (op == .greater || op == .greaterOrEqual):
            // Ordering comparisons never match null; keys are in the contract's order.
            guard !value.isNull, fitsKey(value) else { return nil }
            start = KeyEncoding.encode(value)
            exclusive = op == .greater
        default:
            return nil
        }
        guard limit > 0, let rowsDB = try rowsDatabase(query.entity.name) else { return [] }
        var rows: [StoredRow] = []
        try scan(rowsDB, from: start) { key, bytes in
            if exclusive, let start, key.elementsEqual(start) { return true }
            rows.append(StoredRow(key: key, bytes: bytes))
            return rows.count < limit
        }
        return rows
    }

    /// For a limited query sorted first by an indexed column whose predicate no index
    /// answers: the rows in the query's order read along that index, stopping once offset
    /// plus limit rows are complete. Rows with equal values in the sort column come out
    /// together and are ordered among themselves by the rest of the sort. Nil when the
    /// query is not of that shape, or the index holds overlong entries, which are out of order.
    private func orderedIndexScan(_ query: Query) throws -> [StoredRow]? {
        let entity = query.entity.name
        guard let limit = query.limit, let first = query.sort.first, first.column != query.entity.idColumn,
              let rowsDB = try rowsDatabase(entity),
              let description = try storedDescription(entity), description.indexes.contains(first.column)
        else { return nil }
        let column = first.column
        if let predicate = query.predicate, Self.access(for: predicate, indexed: Set(description.indexes)) != nil { return nil }
        guard let index = try indexDatabase(entity, column) else { return nil }
        var hasOverlong = false
        try scan(index, from: [KeyEncoding.overlongTag]) { _, _ in
            hasOverlong = true
            return false
        }
        if hasOverlong { return nil }
        let needed = query.offset + limit
        var result: [StoredRow] = []
        guard needed > 0 else { return result }
        var group: [StoredRow] = []
        var groupValue: [UInt8] = []
        func flush() throws {
            if group.count > 1 {
                let order = try sortOrder(group, query, inIDOrder: false)
                result.append(contentsOf: order.lazy.map { group[$0] })
            } else {
                result.append(contentsOf: group)
            }
            group.removeAll(keepingCapacity: true)
        }
        try withFilter(query.predicate, entity: entity) { filter in
            try scan(index, reverse: !first.ascending) { key, _ in
                guard let length = KeyEncoding.length(of: key) else {
                    throw ReservoirError(.corrupt, "\(lmdbStore(path)): an entry of the index on \(entity).\(column) cannot be decoded")
                }
                let value = UnsafeRawBufferPointer(rebasing: key[0..<length])
                if !groupValue.withUnsafeBytes({ compareBytes($0, value) == 0 }) {
                    try flush()
                    if result.count >= needed { return false }
                    groupValue = Array(value)
                }
                let id = UnsafeRawBufferPointer(rebasing: key[length...])
                guard let bytes = try get(rowsDB, id) else { return true }
                if try filter?.matches(id, bytes, in: self) ?? true { group.append(StoredRow(key: id, bytes: bytes)) }
                return true
            }
        }
        try flush()
        return result
    }
}
