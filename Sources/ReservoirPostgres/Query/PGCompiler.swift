import Foundation
import Reservoir

/// A query as SQL with its parameters.
struct PGQuery: Equatable {
    var sql: String
    var parameters: [PGParameter]
}

/// Compiles a ``Query`` to SQL for one table, with exactly ``QueryEvaluator``'s semantics.
///
/// - Every condition is two-valued (`c IS NOT NULL AND …`), so `NOT` means what the
///   reference evaluator means, not SQL's three-valued logic.
/// - A comparison between kinds is decided by the kinds' order (numbers < text < blobs)
///   when the column holds one kind; integers and reals compare exactly, by turning the
///   operand into the bound it implies in the column's own type (a `bigint` column is
///   `< 2.5` exactly when it is `<= 2`), never by a lossy cast.
/// - Mixed columns compare ``KeyEncoding`` bytes: `== v` is the range of encodings that
///   start with v's (the kind byte follows), prefix and contains work on the escaped text.
/// - Text columns are `COLLATE "C"`: byte order, as the contract sorts text.
struct PGCompiler {
    let table: TableInfo
    private(set) var parameters: [PGParameter] = []

    static func compile(_ query: Query, table: TableInfo, layout: Layout, counting: Bool) -> PGQuery {
        var compiler = PGCompiler(table: table)
        let name = layout.table(table.entity.name)
        let windowed = query.limit != nil || query.offset > 0
        var sql = counting && !windowed ? "SELECT count(*) FROM \(name)" : "SELECT \(table.selectList) FROM \(name)"
        if let predicate = query.predicate {
            let condition = compiler.condition(predicate)
            if condition != "TRUE" { sql += " WHERE " + condition }
        }
        if !counting || windowed {
            let order = query.sort.compactMap { term -> String? in
                guard let kind = table.kinds[term.column] else { return nil }  // all null: no effect
                var key = Layout.quote(term.column)
                if kind == .mixed {
                    // Without the kind byte: 1 and 1.0 are equal, and the id breaks the tie.
                    key = "substr(\(key), 1, octet_length(\(key)) - 1)"
                }
                // The id is the primary key, never null: plain ASC/DESC, which its index serves, so
                // `ORDER BY id … LIMIT` (a migration's or a first sync's pages) needs no sort of the
                // rest of the table per page, as NULLS FIRST did.
                if term.column == table.entity.idColumn, kind != .mixed { return key + (term.ascending ? " ASC" : " DESC") }
                return key + (term.ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST")
            }
            if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        }
        if let limit = query.limit { sql += " LIMIT \(compiler.placeholder(.integer(Int64(clamping: limit)), "bigint"))" }
        if query.offset > 0 { sql += " OFFSET \(compiler.placeholder(.integer(Int64(clamping: query.offset)), "bigint"))" }
        if counting && windowed { sql = "SELECT count(*) FROM (\(sql)) AS window_rows" }
        return PGQuery(sql: sql, parameters: compiler.parameters)
    }

    /// ``compile(_:table:layout:counting:)``, its SQL taken from `text` when a query of the
    /// same value-free shape (``PGQueryShape``) was compiled for the same tables and given to
    /// `keep`: only the parameters are taken from `query` then. (Debug builds compile again
    /// and check that the SQL and parameters are the compiler's.)
    static func compile(_ query: Query, table: TableInfo, layout: Layout, counting: Bool,
                        text: (StatementKey) -> String?, keep: (String, StatementKey) -> Void) -> PGQuery {
        guard let (shape, parameters) = PGQueryShape.of(query, table: table, counting: counting) else {
            return compile(query, table: table, layout: layout, counting: counting)
        }
        let key = StatementKey(entity: query.entity.name, kind: .query(shape), present: 0)
        if let sql = text(key) {
            assert(compile(query, table: table, layout: layout, counting: counting) == PGQuery(sql: sql, parameters: parameters),
                   "the SQL of a query's shape is not what the compiler makes of it: \(query)")
            return PGQuery(sql: sql, parameters: parameters)
        }
        let compiled = compile(query, table: table, layout: layout, counting: counting)
        assert(compiled.parameters == parameters, "a shape's parameters are not the compiler's: \(query)")
        keep(compiled.sql, key)
        return compiled
    }

    init(table: TableInfo) {
        self.table = table
    }

    mutating func placeholder(_ parameter: PGParameter, _ type: String) -> String {
        parameters.append(parameter)
        return "$\(parameters.count)::\(type)"
    }

    mutating func condition(_ predicate: RowPredicate) -> String {
        let saved = parameters.count
        let result = body(predicate)
        if result == "TRUE" || result == "FALSE" { parameters.removeSubrange(saved...) }
        return result
    }

    private static func constant(_ value: Bool) -> String { value ? "TRUE" : "FALSE" }

    private mutating func body(_ predicate: RowPredicate) -> String {
        switch predicate {
        case let .constant(value):
            return Self.constant(value)

        case let .compare(name, op, operand):
            guard let kind = table.kinds[name] else {
                return Self.constant(QueryEvaluator.compare(.null, op, operand))  // a missing column reads as null
            }
            return comparison(Layout.quote(name), kind: kind, op, operand)

        case let .isIn(name, values):
            let parts = values.map { condition(.compare(column: name, .equal, $0)) }.filter { $0 != "FALSE" }
            if parts.contains("TRUE") { return "TRUE" }
            if parts.isEmpty { return "FALSE" }
            return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " OR ") + ")"

        case let .hasPrefix(name, prefix):
            guard let kind = table.kinds[name] else { return "FALSE" }
            let column = Layout.quote(name)
            switch kind {
            case .text:
                if containsNUL(prefix) { return "FALSE" }  // a text column holds no NUL
                if prefix.isEmpty { return "(\(column) IS NOT NULL)" }
                return "(\(column) IS NOT NULL AND starts_with(\(column), \(placeholder(.text(prefix), "text"))))"
            case .mixed:
                let lower = KeyEncoding.textPrefix(prefix)
                return "(\(column) IS NOT NULL AND \(column) >= \(placeholder(.bytes(lower), "bytea")) AND \(column) < \(placeholder(.bytes(lower + [0xFF]), "bytea")))"
            case .integer, .real, .blob:
                return "FALSE"
            }

        case let .contains(name, part):
            guard let kind = table.kinds[name] else { return "FALSE" }
            let column = Layout.quote(name)
            switch kind {
            case .text:
                if containsNUL(part) { return "FALSE" }
                if part.isEmpty { return "(\(column) IS NOT NULL)" }
                return "(\(column) IS NOT NULL AND strpos(\(column), \(placeholder(.text(part), "text"))) > 0)"
            case .mixed:
                let texts = "\(column) IS NOT NULL AND \(column) >= \(placeholder(.bytes([KeyEncoding.textTag]), "bytea")) AND \(column) < \(placeholder(.bytes([KeyEncoding.blobTag]), "bytea"))"
                if part.isEmpty { return "(\(texts))" }
                // The escaped bytes (NUL written 00 FF) after the tag byte: no escaped text
                // contains 00 00, so a match never runs into the terminator.
                var escaped: [UInt8] = []
                for byte in part.utf8 {
                    escaped.append(byte)
                    if byte == 0 { escaped.append(0xFF) }
                }
                return "(\(texts) AND position(\(placeholder(.bytes(escaped), "bytea")) IN substring(\(column) FROM 2)) > 0)"
            case .integer, .real, .blob:
                return "FALSE"
            }

        case let .and(parts):
            let compiled = parts.map { condition($0) }.filter { $0 != "TRUE" }
            if compiled.contains("FALSE") { return "FALSE" }
            if compiled.isEmpty { return "TRUE" }
            return compiled.count == 1 ? compiled[0] : "(" + compiled.joined(separator: " AND ") + ")"

        case let .or(parts):
            let compiled = parts.map { condition($0) }.filter { $0 != "FALSE" }
            if compiled.contains("TRUE") { return "TRUE" }
            if compiled.isEmpty { return "FALSE" }
            return compiled.count == 1 ? compiled[0] : "(" + compiled.joined(separator: " OR ") + ")"

        case let .not(inner):
            let compiled = condition(inner)
            switch compiled {
            case "TRUE": return "FALSE"
            case "FALSE": return "TRUE"
            default: return "(NOT " + compiled + ")"
            }
        }
    }

    // MARK: - Comparisons

    private mutating func comparison(_ column: String, kind: ColumnKind, _ op: ComparisonOperator, _ operand: Value) -> String {
        let operand = operand.stored
        if operand.isNull {
            switch op {
            case .equal: return "(\(column) IS NULL)"
            case .notEqual: return "(\(column) IS NOT NULL)"
            case .less, .lessOrEqual, .greater, .greaterOrEqual: return "FALSE"
            }
        }
        if kind == .mixed {
            return mixedComparison(column, op, operand)
        }
        guard let columnRank = kind.rank, let operandKind = ColumnKind(of: operand), let operandRank = (operandKind == .mixed ? 2 : operandKind.rank) else {
            return "FALSE"
        }
        if columnRank != operandRank {
            // Every non-null value of the column is on one side of the operand.
            let below = columnRank < operandRank
            switch op {
            case .equal: return "FALSE"
            case .notEqual: return "TRUE"
            case .less, .lessOrEqual: return below ? "(\(column) IS NOT NULL)" : "FALSE"
            case .greater, .greaterOrEqual: return below ? "FALSE" : "(\(column) IS NOT NULL)"
            }
        }
        switch (kind, operand) {
        case let (.text, .text(text)) where containsNUL(text):
            // No stored text holds NUL: compare with the part before it, which the operand extends.
            let head = String(decoding: text.utf8.prefix { $0 != 0 }, as: UTF8.self)
            let bound = placeholder(.text(head), "text")
            switch op {
            case .equal: return "FALSE"
            case .notEqual: return "TRUE"
            case .less, .lessOrEqual: return "(\(column) IS NOT NULL AND \(column) <= \(bound))"
            case .greater, .greaterOrEqual: return "(\(column) IS NOT NULL AND \(column) > \(bound))"
            }
        case let (.integer, .real(real)):
            return integerColumn(column, op, real)
        case let (.real, .integer(integer)):
            return realColumn(column, op, integer)
        default:
            guard let parameter = ColumnCodec.parameter(operand, kind: kind, isID: false) else { return "FALSE" }
            return plain(column, op, placeholder(parameter, kind.castType))
        }
    }

    private func plain(_ column: String, _ op: ComparisonOperator, _ bound: String) -> String {
        switch op {
        case .equal: "(\(column) IS NOT NULL AND \(column) = \(bound))"
        case .notEqual: "(\(column) IS NULL OR \(column) <> \(bound))"
        case .less: "(\(column) IS NOT NULL AND \(column) < \(bound))"
        case .lessOrEqual: "(\(column) IS NOT NULL AND \(column) <= \(bound))"
        case .greater: "(\(column) IS NOT NULL AND \(column) > \(bound))"
        case .greaterOrEqual: "(\(column) IS NOT NULL AND \(column) >= \(bound))"
        }
    }

    /// A `bigint` column against a real: exact, through the integer bounds the real implies.
    private mutating func integerColumn(_ column: String, _ op: ComparisonOperator, _ real: Double) -> String {
        if let exact = Int64(exactly: real) {
            return plain(column, op, placeholder(.integer(exact), "bigint"))
        }
        let all = "(\(column) IS NOT NULL)"
        switch op {
        case .equal: return "FALSE"
        case .notEqual: return "TRUE"
        case .less, .lessOrEqual:
            // c < r, r not an integer: c <= floor(r).
            let floor = real.rounded(.down)
            if floor >= 9_223_372_036_854_775_808.0 { return all }
            if floor < -9_223_372_036_854_775_808.0 { return "FALSE" }
            return plain(column, .lessOrEqual, placeholder(.integer(Int64(floor)), "bigint"))
        case .greater, .greaterOrEqual:
            let ceiling = real.rounded(.up)
            if ceiling < -9_223_372_036_854_775_808.0 { return all }
            if ceiling >= 9_223_372_036_854_775_808.0 { return "FALSE" }
            return plain(column, .greaterOrEqual, placeholder(.integer(Int64(ceiling)), "bigint"))
        }
    }

    /// A `double precision` column against an integer no double equals: the nearest double
    /// and which side of the integer it lies on decide.
    private mutating func realColumn(_ column: String, _ op: ComparisonOperator, _ integer: Int64) -> String {
        let near = Double(integer)
        if Double(exactly: integer) != nil {
            return plain(column, op, placeholder(.real(near), "float8"))
        }
        // `near` is not `integer`; is it above it?
        let above = near >= 9_223_372_036_854_775_808.0 || Int64(near) > integer
        let bound = placeholder(.real(near), "float8")
        switch op {
        case .equal: return "FALSE"
        case .notEqual: return "TRUE"
        case .less, .lessOrEqual: return plain(column, above ? .less : .lessOrEqual, bound)
        case .greater, .greaterOrEqual: return plain(column, above ? .greaterOrEqual : .greater, bound)
        }
    }

    /// A mixed column: byte ranges over the order-preserving encoding. Values equal to v
    /// are exactly the encodings starting with v's (then a kind byte below FF).
    private mutating func mixedComparison(_ column: String, _ op: ComparisonOperator, _ operand: Value) -> String {
        let encoded = KeyEncoding.encode(operand)
        switch op {
        case .equal, .notEqual:
            let lower = placeholder(.bytes(encoded), "bytea")
            let upper = placeholder(.bytes(encoded + [0xFF]), "bytea")
            let equal = "\(column) >= \(lower) AND \(column) < \(upper)"
            return op == .equal ? "(\(column) IS NOT NULL AND \(equal))" : "(\(column) IS NULL OR NOT (\(equal)))"
        case .less: return plain(column, .less, placeholder(.bytes(encoded), "bytea"))
        case .lessOrEqual: return plain(column, .less, placeholder(.bytes(encoded + [0xFF]), "bytea"))
        case .greater: return plain(column, .greaterOrEqual, placeholder(.bytes(encoded + [0xFF]), "bytea"))
        case .greaterOrEqual: return plain(column, .greaterOrEqual, placeholder(.bytes(encoded), "bytea"))
        }
    }
}
