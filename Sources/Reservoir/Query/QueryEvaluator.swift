/// The reference evaluator: the contract's query semantics, executable.
///
/// The in-memory and LMDB backends answer queries with it; the SQLite backend
/// compiles to SQL that must agree with it, which the conformance suite checks.
/// Semantics (Backends.md, "Queries"):
/// - `==` and `!=` are null-safe: `x == NULL` matches exactly the null values.
///   Numbers compare numerically across integer and real; text by UTF-8 bytes.
/// - `<`, `<=`, `>`, `>=` never match when either side is null; otherwise they use
///   the total order, so a number is less than any text.
/// - `hasPrefix` and `contains` match only text values, byte-wise and case-sensitive.
/// - `in` is a null-safe `==` against each listed value.
/// - `and`, `or`, `not` are two-valued boolean logic (there is no SQL "unknown").
public enum QueryEvaluator {
    /// Whether `row` satisfies `predicate`. A missing column reads as null.
    public static func matches(_ predicate: RowPredicate, _ row: Row) -> Bool {
        switch predicate {
        case let .constant(result):
            return result
        case let .compare(column, op, operand):
            return compare(row.value(column), op, operand)
        case let .isIn(column, values):
            let value = row.value(column)
            return values.contains { compare(value, .equal, $0) }
        case let .hasPrefix(column, prefix):
            guard case let .text(text) = row.value(column) else { return false }
            return text.utf8.starts(with: prefix.utf8)
        case let .contains(column, part):
            guard case let .text(text) = row.value(column) else { return false }
            return containsBytes(text.utf8, part.utf8)
        case let .and(parts):
            return parts.allSatisfy { matches($0, row) }
        case let .or(parts):
            return parts.contains { matches($0, row) }
        case let .not(inner):
            return !matches(inner, row)
        }
    }

    /// `value op operand` under the contract's rules.
    public static func compare(_ value: Value, _ op: ComparisonOperator, _ operand: Value) -> Bool {
        switch op {
        case .equal:
            return value == operand
        case .notEqual:
            return value != operand
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if value.isNull || operand.isNull { return false }
            let order = Value.compare(value, operand)
            switch op {
            case .less: return order < 0
            case .lessOrEqual: return order <= 0
            case .greater: return order > 0
            default: return order >= 0
            }
        }
    }

    /// Compares two rows by `sort`: negative when `lhs` comes first, zero when tied on every term.
    public static func compare(_ lhs: Row, _ rhs: Row, by sort: [SortTerm]) -> Int {
        for term in sort {
            let order = Value.compare(lhs.value(term.column), rhs.value(term.column))
            if order != 0 { return term.ascending ? order : -order }
        }
        return 0
    }

    /// The answer to `query` over a set of candidate rows of its entity: filtered,
    /// sorted (total order, id last), then windowed by offset and limit.
    public static func evaluate<S: Sequence>(_ query: Query, over rows: S) -> [Row] where S.Element == Row {
        var matching: [Row]
        if let predicate = query.predicate {
            matching = rows.filter { matches(predicate, $0) }
        } else {
            matching = Array(rows)
        }
        matching = sorted(matching, by: query.sort)
        return window(matching, query)
    }

    /// `rows` in the order of `sort`. Each row's sort values are read once into a flat
    /// buffer and an index array is sorted against it, so no row or value is copied,
    /// retained or released per comparison. Rows already in order (a table read in id order)
    /// are returned after one pass over the keys, and a key of integers (the id a query
    /// without an order sorts by) is sorted as integers.
    public static func sorted(_ rows: [Row], by sort: [SortTerm]) -> [Row] {
        let width = sort.count
        guard rows.count > 1, width > 0 else { return rows }
        var keys: [Value] = []
        keys.reserveCapacity(rows.count * width)
        for row in rows {
            for term in sort { keys.append(row.value(term.column)) }
        }
        let ascending = sort.map(\.ascending)
        let order: [Int]? = keys.withUnsafeBufferPointer { keys in
            ascending.withUnsafeBufferPointer { ascending in
                // Whether the row at key offset `i` sorts before the one at `j`.
                func before(_ i: Int, _ j: Int) -> Bool {
                    var i = i, j = j
                    for t in 0..<width {
                        let comparison = compareKeys(keys[i], keys[j])
                        if comparison != 0 { return ascending[t] ? comparison < 0 : comparison > 0 }
                        i &+= 1
                        j &+= 1
                    }
                    return false
                }
                if (1..<rows.count).allSatisfy({ !before($0 &* width, ($0 &- 1) &* width) }) { return nil }
                if width == 1, let integers = integerKeys(keys) {
                    return integers.withUnsafeBufferPointer { integers in
                        var order = Array(0..<rows.count)
                        if ascending[0] {
                            order.sort { integers[$0] < integers[$1] }
                        } else {
                            order.sort { integers[$0] > integers[$1] }
                        }
                        return order
                    }
                }
                var order = Array(0..<rows.count)
                order.sort { before($0 &* width, $1 &* width) }
                return order
            }
        }
        guard let order else { return rows }
        return order.map { rows[$0] }
    }

    /// ``Value/compare(_:_:)`` with two integers compared inline.
    @inline(__always)
    private static func compareKeys(_ lhs: Value, _ rhs: Value) -> Int {
        if case let .integer(a) = lhs, case let .integer(b) = rhs { return a < b ? -1 : (a == b ? 0 : 1) }
        return Value.compare(lhs, rhs)
    }

    /// The keys as integers, when every one is an integer.
    private static func integerKeys(_ keys: UnsafeBufferPointer<Value>) -> [Int64]? {
        var integers: [Int64] = []
        integers.reserveCapacity(keys.count)
        for key in keys {
            guard case let .integer(integer) = key else { return nil }
            integers.append(integer)
        }
        return integers
    }

    /// Applies a query's offset and limit to rows already filtered and sorted.
    public static func window(_ rows: [Row], _ query: Query) -> [Row] {
        guard query.offset > 0 || query.limit != nil else { return rows }
        let start = min(query.offset, rows.count)
        let end = query.limit.map { start + min($0, rows.count - start) } ?? rows.count
        return Array(rows[start..<end])
    }

    private static func containsBytes(_ haystack: String.UTF8View, _ needle: String.UTF8View) -> Bool {
        if needle.isEmpty { return true }
        let h = Array(haystack)
        let n = Array(needle)
        guard n.count <= h.count else { return false }
        let first = n[0]
        var i = 0
        while i <= h.count - n.count {
            if h[i] == first && h[i..<(i + n.count)].elementsEqual(n) { return true }
            i += 1
        }
        return false
    }
}
