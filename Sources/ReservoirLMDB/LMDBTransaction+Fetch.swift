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

    /// Row keys of the candidates `access` selects, without duplicates.
    private func candidates(_ access: Access, entity: String, into keys: inout Set<[UInt8]>) throws {
        switch access {
        case .nothing:
            return
        case let .union(parts):
            for part in parts { try candidates(part, entity: entity, into: &keys) }
        case let .ranges(column, ranges, _):
            guard let index = try indexDatabase(entity, column) else { return }
            for range in ranges {
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
                        keys.insert(Array(key[length...]))
                        return true
                    }
                }
            }
            // Entries too long for a key are kept apart; they are always candidates.
            try scan(index, from: [KeyEncoding.overlongTag]) { key, _ in
                keys.insert(Array(key.dropFirst()))
                return true
            }
        }
    }

    // MARK: - ReadTransaction

    func fetch(_ query: Query) throws -> [Row] {
        try LMDBErrors.convert(path: path) { try matchingRows(query, countOnly: false).rows }
    }

    func count(_ query: Query) throws -> Int {
        try LMDBErrors.convert(path: path) {
            let entity = query.entity.name
            if query.predicate == nil {
                guard let rows = try rowsDatabase(entity) else { return 0 }
                return windowed(try entryCount(rows), query)
            }
            return try matchingRows(query, countOnly: true).count
        }
    }

    private func windowed(_ count: Int, _ query: Query) -> Int {
        let available = max(0, count - query.offset)
        return query.limit.map { min($0, available) } ?? available
    }

    /// The query's rows (or just their number), narrowed by an index when possible.
    private func matchingRows(_ query: Query, countOnly: Bool) throws -> (rows: [Row], count: Int) {
        let entity = query.entity.name
        guard let rowsDB = try rowsDatabase(entity) else { return ([], 0) }
        let indexed = Set(try storedDescription(entity)?.indexes ?? [])
        var rows: [Row] = []
        var inIDOrder = false
        let access = query.predicate.flatMap { Self.access(for: $0, indexed: indexed) }
        if !countOnly, access == nil, let limit = query.limit, let first = query.sort.first,
           first.column != query.entity.idColumn, indexed.contains(first.column),
           let ordered = try orderedIndexScan(query, rowsDB: rowsDB, column: first.column, needed: query.offset + limit) {
            let result = QueryEvaluator.window(ordered, query)
            return (result, result.count)
        }
        if let predicate = query.predicate, let access {
            var keys: Set<[UInt8]> = []
            try candidates(access, entity: entity, into: &keys)
            rows.reserveCapacity(keys.count)
            for key in keys {
                guard let bytes = try get(rowsDB, key) else { continue }
                let row = try key.withUnsafeBytes { try decodeRow(bytes, entity: entity, key: $0) }
                if QueryEvaluator.matches(predicate, row) { rows.append(row) }
            }
        } else {
            // Keys are in the contract's order, so a cursor scan is in id order.
            inIDOrder = true
            let predicate = query.predicate
            if predicate == nil { rows.reserveCapacity(try entryCount(rowsDB)) }
            // A local cache: the class property would be checked for exclusive access per row.
            var names = ColumnNameCache()
            swap(&names, &self.names)
            defer { swap(&names, &self.names) }
            try scan(rowsDB) { key, value in
                guard let row = RowCodec.decode(value, names: &names) else {
                    throw corruptRow(value, entity: entity, key: key)
                }
                if predicate.map({ QueryEvaluator.matches($0, row) }) ?? true { rows.append(row) }
                return true
            }
        }
        if countOnly { return ([], windowed(rows.count, query)) }
        RowSort.sort(&rows, by: query.sort, idColumn: query.entity.idColumn, inIDOrder: inIDOrder)
        let result = QueryEvaluator.window(rows, query)
        return (result, result.count)
    }

    /// Rows in the query's order read along the index of its first sort term, stopping once
    /// `needed` rows (offset plus limit) are complete; nil when the index holds overlong
    /// entries, which are out of order. Rows with equal values in the sort column come
    /// out together and are ordered among themselves by the rest of the sort.
    private func orderedIndexScan(_ query: Query, rowsDB: MDB_dbi, column: String, needed: Int) throws -> [Row]? {
        let entity = query.entity.name
        guard let index = try indexDatabase(entity, column) else { return nil }
        var hasOverlong = false
        try scan(index, from: [KeyEncoding.overlongTag]) { _, _ in
            hasOverlong = true
            return false
        }
        if hasOverlong { return nil }
        let predicate = query.predicate
        let sort = query.sort
        var result: [Row] = []
        var group: [Row] = []
        var groupValue: [UInt8] = []
        func flush() {
            if group.count > 1 { RowSort.sort(&group, by: sort, idColumn: query.entity.idColumn, inIDOrder: false) }
            result.append(contentsOf: group)
            group.removeAll(keepingCapacity: true)
        }
        guard needed > 0 else { return [] }
        try scan(index, reverse: !sort[0].ascending) { key, _ in
            guard let length = KeyEncoding.length(of: key) else {
                throw ReservoirError(.corrupt, "lmdb:\(path): an entry of the index on \(entity).\(column) cannot be decoded")
            }
            let value = UnsafeRawBufferPointer(rebasing: key[0..<length])
            if !groupValue.withUnsafeBytes({ compareBytes($0, value) == 0 }) {
                flush()
                if result.count >= needed { return false }
                groupValue = Array(value)
            }
            let id = UnsafeRawBufferPointer(rebasing: key[length...])
            let idKey = Array(id)
            guard let bytes = try get(rowsDB, idKey) else { return true }
            let row = try decodeRow(bytes, entity: entity, key: id)
            if predicate.map({ QueryEvaluator.matches($0, row) }) ?? true { group.append(row) }
            return true
        }
        flush()
        return result
    }
}
