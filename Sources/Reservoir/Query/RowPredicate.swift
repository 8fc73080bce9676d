/// The backend-neutral predicate tree: column names and stored values, no Swift types.
///
/// Built by ``RecordPredicate`` from typed key paths; backends either compile it
/// (SQLite compiles it to SQL) or evaluate it with ``QueryEvaluator``. Backends.md
/// defines each case's meaning, including nulls and mixed storage classes.
public indirect enum RowPredicate: Sendable, Hashable {
    /// Always true or always false.
    case constant(Bool)
    /// `column op value`. `==` and `!=` are null-safe; ordering operators never match null.
    case compare(column: String, ComparisonOperator, Value)
    /// `column` equals (null-safe) one of the values.
    case isIn(column: String, [Value])
    /// The column's value is text starting with these UTF-8 bytes.
    case hasPrefix(column: String, String)
    /// The column's value is text containing these UTF-8 bytes.
    case contains(column: String, String)
    /// Every part matches; an empty list matches everything.
    case and([RowPredicate])
    /// Some part matches; an empty list matches nothing.
    case or([RowPredicate])
    /// The part does not match; two-valued, so `not` of an ordering matches nulls.
    case not(RowPredicate)

    /// Every column the expression reads.
    public var columns: Set<String> {
        switch self {
        case .constant: []
        case let .compare(column, _, _), let .isIn(column, _), let .hasPrefix(column, _), let .contains(column, _): [column]
        case let .and(parts), let .or(parts): parts.reduce(into: []) { $0.formUnion($1.columns) }
        case let .not(inner): inner.columns
        }
    }
}

extension RowPredicate {
    /// The predicate with every operand as it would be stored (NaN as null, see ``Value/stored``).
    var storedOperands: RowPredicate {
        switch self {
        case .constant, .hasPrefix, .contains: self
        case let .compare(column, op, value): .compare(column: column, op, value.stored)
        case let .isIn(column, values): .isIn(column: column, values.map(\.stored))
        case let .and(parts): .and(parts.map(\.storedOperands))
        case let .or(parts): .or(parts.map(\.storedOperands))
        case let .not(inner): .not(inner.storedOperands)
        }
    }
}

extension RowPredicate: CustomStringConvertible {
    /// The predicate as SQL-like text, for messages and logs.
    public var description: String {
        switch self {
        case let .constant(b): return b ? "TRUE" : "FALSE"
        case let .compare(column, op, value): return "\(column) \(op.rawValue) \(value)"
        case let .isIn(column, values): return "\(column) IN (\(values.map(\.description).joined(separator: ", ")))"
        case let .hasPrefix(column, prefix): return "\(column) HAS PREFIX \(Value.text(prefix))"
        case let .contains(column, part): return "\(column) CONTAINS \(Value.text(part))"
        case let .and(parts): return "(" + parts.map(\.description).joined(separator: " AND ") + ")"
        case let .or(parts): return "(" + parts.map(\.description).joined(separator: " OR ") + ")"
        case let .not(inner): return "NOT \(inner)"
        }
    }
}

extension RowPredicate {
    /// A folded comparison for rows without Swift types: `make` receives the shadow column of
    /// `column` for `options` and `text` folded with them (``TextFolding``), for example
    /// `RowPredicate.folded("title", "cafe", options: .caseInsensitive) { .contains(column: $0, $1) }`.
    /// The entity's rows must carry the shadow columns, as a searchable field's do.
    public static func folded(_ column: String, _ text: String, options: TextMatchOptions,
                              _ make: (String, String) -> RowPredicate) -> RowPredicate {
        make(TextFolding.shadowColumn(for: column, options: options), TextFolding.fold(text, options: options))
    }
}
