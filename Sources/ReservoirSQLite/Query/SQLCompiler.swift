import Reservoir

/// A query compiled to SQL, with its parameters to bind in order (`?1`, `?2`, …).
struct CompiledQuery: Equatable {
    enum Parameter: Equatable {
        /// A value bound as itself.
        case value(Value)
        /// A text's UTF-8 bytes bound as a blob, for byte-wise matching.
        case bytes(String)
    }

    var sql: String
    var parameters: [Parameter]

    func bind(to statement: Statement) throws {
        for (offset, parameter) in parameters.enumerated() {
            switch parameter {
            case let .value(value): try statement.bind(value, at: Int32(offset + 1))
            case let .bytes(text): try statement.bindBytes(of: text, at: Int32(offset + 1))
            }
        }
    }
}

/// Compiles ``Query``s to SQL that returns exactly what ``QueryEvaluator`` returns.
///
/// Every compiled predicate is two-valued (0 or 1, never NULL), so `NOT` and `OR` behave
/// as the reference evaluator's boolean logic does:
///
/// | predicate | SQL |
/// | --- | --- |
/// | `c == v` | `c IS ?` (null-safe; `c IS NULL` for null) |
/// | `c != v` | `c IS NOT ?` |
/// | `c < v` (also `<=`, `>`, `>=`) | `(c IS NOT NULL AND c < ?)`; `0` when `v` is null |
/// | `c in [v…]` | `(c IS NOT NULL AND c IN (?, …))`, `OR c IS NULL` when the list holds null |
/// | `c hasPrefix p` | `(typeof(c) = 'text' AND substr(CAST(c AS BLOB), 1, ?) IS ?)`, bytes bound as a blob |
/// | `c contains p` | `(typeof(c) = 'text' AND instr(CAST(c AS BLOB), ?) > 0)` |
/// | `and`/`or`/`not` | `(a AND b)`, `(a OR b)`, `NOT (a)`; empty `and` is `1`, empty `or` is `0` |
///
/// Columns are declared without a type, so no affinity conversion happens: SQLite's
/// comparisons then follow the contract's order (null < numbers < text < blob, numbers
/// compared numerically, text and blobs with memcmp). The one typed column, an integer
/// id that is the rowid (`INTEGER PRIMARY KEY`), is written `+id` when compared with text:
/// the unary plus drops its affinity, which would otherwise turn `'1'` into `1`. A column
/// the table does not have (yet) reads as NULL. Sorting is `ORDER BY` over the same
/// order, the id last.
struct SQLCompiler {
    let table: Catalog.Table
    private(set) var parameters: [CompiledQuery.Parameter] = []

    init(table: Catalog.Table) {
        self.table = table
    }

    /// ``compile(_:table:counting:)`` for `session`'s catalog, its SQL kept by the session
    /// for a query of a value-free shape (``SQLQueryShape``) and taken from there for the next
    /// query of that shape at the same catalog revision: only the parameters are taken from
    /// `query` then. (Debug builds compile again and check that the SQL and parameters are the
    /// compiler's.)
    static func compile(_ query: Query, table: Catalog.Table, counting: Bool, in session: Session) -> CompiledQuery {
        guard let (shape, parameters) = SQLQueryShape.of(query, table: table, counting: counting) else {
            return compile(query, table: table, counting: counting)
        }
        if let sql = session.queryText(shape) {
            assert(compile(query, table: table, counting: counting) == CompiledQuery(sql: sql, parameters: parameters),
                   "the SQL of a query's shape is not what the compiler makes of it: \(query)")
            return CompiledQuery(sql: sql, parameters: parameters)
        }
        let compiled = compile(query, table: table, counting: counting)
        assert(compiled.parameters == parameters, "a shape's parameters are not the compiler's: \(query)")
        session.keep(compiled.sql, for: shape)
        return compiled
    }

    /// `SELECT *` (or `count(*)`) for `query`.
    static func compile(_ query: Query, table: Catalog.Table, counting: Bool) -> CompiledQuery {
        var compiler = SQLCompiler(table: table)
        // Built in one buffer, reserved once: each read compiles its query, and growing the
        // text piece by piece cost about as much as the rest of the compilation.
        var sql = counting && query.limit == nil && query.offset == 0 ? "SELECT count(*) FROM " : "SELECT * FROM "
        sql.reserveCapacity(128)
        sql += SQL.identifier(table.entity.name)
        if let predicate = query.predicate {
            let condition = compiler.condition(predicate)
            if condition != "1" {
                sql += " WHERE "
                sql += condition
            }
        }
        if !counting {
            var separator = " ORDER BY "
            for term in query.sort {
                guard let column = compiler.column(term.column) else { continue }  // all null: no effect
                sql += separator
                sql += column
                sql += term.ascending ? " ASC" : " DESC"
                separator = ", "
            }
        }
        if query.limit != nil || query.offset > 0 {
            sql += " LIMIT \(compiler.placeholder(.integer(Int64(clamping: query.limit ?? -1))))"
            sql += " OFFSET \(compiler.placeholder(.integer(Int64(clamping: query.offset))))"
            if counting { sql = "SELECT count(*) FROM (\(sql))" }
        }
        return CompiledQuery(sql: sql, parameters: compiler.parameters)
    }

    /// The quoted column, or nil when the table has no such column.
    func column(_ name: String) -> String? {
        table.columnSet.contains(name) ? SQL.identifier(name) : nil
    }

    /// `column` as an expression SQLite applies no affinity to: `+"id"` for a rowid id
    /// column (so text compares as text), the column itself otherwise (it has none).
    func withoutAffinity(_ name: String, _ column: String) -> String {
        table.integerKey && name == table.entity.idColumn ? "+" + column : column
    }

    mutating func placeholder(_ value: Value) -> String {
        parameters.append(.value(value))
        return "?\(parameters.count)"
    }

    mutating func bytesPlaceholder(_ text: String) -> String {
        parameters.append(.bytes(text))
        return "?\(parameters.count)"
    }

    /// A two-valued SQL condition for `predicate`. A condition folded to a constant
    /// (`0` or `1`) leaves no parameters behind.
    mutating func condition(_ predicate: RowPredicate) -> String {
        let saved = parameters.count
        let result = conditionBody(predicate)
        if result == "0" || result == "1" { parameters.removeSubrange(saved...) }
        return result
    }

    private mutating func conditionBody(_ predicate: RowPredicate) -> String {
        switch predicate {
        case let .constant(value):
            return value ? "1" : "0"

        case let .compare(name, op, operand):
            guard let column = column(name) else {
                // A missing column reads as null: decide the comparison now.
                return QueryEvaluator.compare(.null, op, operand) ? "1" : "0"
            }
            return comparison(operand.isText ? withoutAffinity(name, column) : column, op, operand)

        case let .isIn(name, values):
            guard let column = column(name) else {
                return values.contains(where: \.isNull) ? "1" : "0"
            }
            let nonNull = values.filter { !$0.isNull }
            var parts: [String] = []
            if !nonNull.isEmpty {
                let column = nonNull.contains(where: \.isText) ? withoutAffinity(name, column) : column
                let list = nonNull.map { placeholder($0) }.joined(separator: ", ")
                parts.append("(\(column) IS NOT NULL AND \(column) IN (\(list)))")
            }
            if values.contains(where: \.isNull) { parts.append("\(column) IS NULL") }
            switch parts.count {
            case 0: return "0"
            case 1: return parts[0]
            default: return "(" + parts.joined(separator: " OR ") + ")"
            }

        case let .hasPrefix(name, prefix):
            guard let column = column(name) else { return "0" }
            if prefix.isEmpty { return "(typeof(\(column)) = 'text')" }
            // substr of an empty blob is NULL, so IS keeps the condition two-valued.
            let length = placeholder(.integer(Int64(prefix.utf8.count)))
            let bytes = bytesPlaceholder(prefix)
            return "(typeof(\(column)) = 'text' AND substr(CAST(\(column) AS BLOB), 1, \(length)) IS \(bytes))"

        case let .contains(name, part):
            guard let column = column(name) else { return "0" }
            if part.isEmpty { return "(typeof(\(column)) = 'text')" }
            return "(typeof(\(column)) = 'text' AND instr(CAST(\(column) AS BLOB), \(bytesPlaceholder(part))) > 0)"

        case let .and(parts):
            let compiled = parts.map { condition($0) }.filter { $0 != "1" }
            if compiled.contains("0") || compiled.isEmpty { return compiled.isEmpty ? "1" : "0" }
            return compiled.count == 1 ? compiled[0] : "(" + compiled.joined(separator: " AND ") + ")"

        case let .or(parts):
            let compiled = parts.map { condition($0) }.filter { $0 != "0" }
            if compiled.contains("1") || compiled.isEmpty { return compiled.isEmpty ? "0" : "1" }
            return compiled.count == 1 ? compiled[0] : "(" + compiled.joined(separator: " OR ") + ")"

        case let .not(inner):
            let compiled = condition(inner)
            switch compiled {
            case "1": return "0"
            case "0": return "1"
            default: return "NOT " + compiled
            }
        }
    }

    private mutating func comparison(_ column: String, _ op: ComparisonOperator, _ operand: Value) -> String {
        switch op {
        case .equal:
            return operand.isNull ? "(\(column) IS NULL)" : "(\(column) IS \(placeholder(operand)))"
        case .notEqual:
            return operand.isNull ? "(\(column) IS NOT NULL)" : "(\(column) IS NOT \(placeholder(operand)))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard !operand.isNull else { return "0" }
            return "(\(column) IS NOT NULL AND \(column) \(op.rawValue) \(placeholder(operand)))"
        }
    }
}
