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
    /// buffer and an index array is sorted against it (``order(of:by:count:)``), so no row or
    /// value is copied, retained or released per comparison.
    public static func sorted(_ rows: [Row], by sort: [SortTerm]) -> [Row] {
        guard rows.count > 1, !sort.isEmpty else { return rows }
        var keys: [Value] = []
        keys.reserveCapacity(rows.count * sort.count)
        for row in rows {
            for term in sort { keys.append(row.value(term.column)) }
        }
        guard let order = order(of: keys, by: sort, count: rows.count) else { return rows }
        return order.map { rows[$0] }
    }

    /// The positions of `count` rows in the order of `sort`, given each row's sort values in
    /// turn (`keys`, `sort.count` a row); nil when they are in order already, which one pass
    /// over the keys finds (a table read in id order). Stable. When the first term's values
    /// are all integers (the id a query without an order sorts by, or an integer field), they
    /// are compared as integers, and the other terms only on a tie.
    static func order(of keys: [Value], by sort: [SortTerm], count: Int) -> [Int]? {
        let width = sort.count
        guard count > 1, width > 0 else { return nil }
        let ascending = sort.map(\.ascending)
        return keys.withUnsafeBufferPointer { keys in
            ascending.withUnsafeBufferPointer { ascending in
                // Whether row `a` sorts before row `b` by the terms from `first` on.
                func before(_ a: Int, _ b: Int, from first: Int) -> Bool {
                    var i = a &* width &+ first, j = b &* width &+ first
                    for t in first..<width {
                        let comparison = compareKeys(keys[i], keys[j])
                        if comparison != 0 { return ascending[t] ? comparison < 0 : comparison > 0 }
                        i &+= 1
                        j &+= 1
                    }
                    return false
                }
                if (1..<count).allSatisfy({ !before($0, $0 &- 1, from: 0) }) { return nil }
                var order = Array(0..<count)
                if let integers = firstIntegers(keys, width: width) {
                    integers.withUnsafeBufferPointer { integers in
                        // One term (the id): nothing to break ties with, and a smaller closure.
                        if width == 1 {
                            if ascending[0] {
                                order.sort { integers[$0] < integers[$1] }
                            } else {
                                order.sort { integers[$0] > integers[$1] }
                            }
                            return
                        }
                        let up = ascending[0]
                        order.sort { a, b in
                            let x = integers[a], y = integers[b]
                            if x != y { return up ? x < y : x > y }
                            return before(a, b, from: 1)
                        }
                    }
                } else {
                    order.sort { before($0, $1, from: 0) }
                }
                return order
            }
        }
    }

    /// ``Value/compare(_:_:)`` with two integers compared inline.
    @inline(__always)
    private static func compareKeys(_ lhs: Value, _ rhs: Value) -> Int {
        if case let .integer(a) = lhs, case let .integer(b) = rhs { return a < b ? -1 : (a == b ? 0 : 1) }
        return Value.compare(lhs, rhs)
    }

    /// Each row's first sort value (every `width`th key), when every one is an integer.
    private static func firstIntegers(_ keys: UnsafeBufferPointer<Value>, width: Int) -> [Int64]? {
        var integers: [Int64] = []
        integers.reserveCapacity(keys.count / width)
        for position in stride(from: 0, to: keys.count, by: width) {
            guard case let .integer(integer) = keys[position] else { return nil }
            integers.append(integer)
        }
        return integers
    }

    /// Applies a query's offset and limit to rows already filtered and sorted.
    public static func window(_ rows: [Row], _ query: Query) -> [Row] {
        guard query.offset > 0 || query.limit != nil else { return rows }
        return Array(rows[window(count: rows.count, query)])
    }

    /// The positions a query's offset and limit keep of `count` rows filtered and sorted.
    static func window(count: Int, _ query: Query) -> Range<Int> {
        let start = min(query.offset, count)
        let end = query.limit.map { start + min($0, count - start) } ?? count
        return start..<end
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
