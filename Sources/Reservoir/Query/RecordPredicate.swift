/// A typed predicate over a record type, written with key paths:
///
///     \Todo.done == false && \.priority >= 2
///     .hasPrefix(\Todo.title, "Buy") || \.due == nil
///     .isIn(\Todo.priority, [1, 2, 3])
///
/// Key paths resolve to columns through the record's ``Schema`` when the request
/// runs; a key path the schema does not name throws ``ReservoirError`` (`.invalidQuery`).
/// Named `RecordPredicate` so it never clashes with Foundation's `Predicate`.
public struct RecordPredicate<Root: Storable>: Sendable {
    @usableFromInline let resolve: @Sendable (Schema<Root>) throws -> RowPredicate

    init(_ resolve: @escaping @Sendable (Schema<Root>) throws -> RowPredicate) {
        self.resolve = resolve
    }

    /// The backend-neutral expression for this predicate.
    public func expression() throws -> RowPredicate {
        try resolve(Root.schema)
    }

    /// Matches every record. (Not `.all`/`.none`: `where: .none` would read as "no predicate".)
    public static var always: RecordPredicate { RecordPredicate { _ in .constant(true) } }

    /// Matches no record.
    public static var never: RecordPredicate { RecordPredicate { _ in .constant(false) } }

    /// A comparison of a field with a value.
    public static func compare<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>, _ op: ComparisonOperator, _ value: V) -> RecordPredicate {
        let path = SendableKeyPath(keyPath)
        return RecordPredicate { schema in try .compare(column: schema.column(for: path.path), op, value.toValue()) }
    }

    /// The field equals one of `values` (null-safe: `nil` in the list matches null).
    public static func isIn<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>, _ values: [V]) -> RecordPredicate {
        let path = SendableKeyPath(keyPath)
        return RecordPredicate { schema in try .isIn(column: schema.column(for: path.path), values.map { try $0.toValue() }) }
    }

    /// The field is text starting with `prefix`, compared by UTF-8 bytes (case-sensitive).
    public static func hasPrefix<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>, _ prefix: String) -> RecordPredicate {
        let path = SendableKeyPath(keyPath)
        return RecordPredicate { schema in try .hasPrefix(column: schema.column(for: path.path), prefix) }
    }

    /// The field is text containing `part`, compared by UTF-8 bytes (case-sensitive).
    public static func contains<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>, _ part: String) -> RecordPredicate {
        let path = SendableKeyPath(keyPath)
        return RecordPredicate { schema in try .contains(column: schema.column(for: path.path), part) }
    }

    /// The field's text equals `text` once both are folded with `options` (``TextFolding``),
    /// compared byte-wise against the field's shadow column. Empty `options` compare as `==`.
    /// Throws `.invalidQuery` when the request runs if the field is not searchable.
    ///
    ///     .equals(\Message.author, "zoe", options: .caseInsensitive)
    public static func equals<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>, _ text: String, options: TextMatchOptions) -> RecordPredicate {
        folded(keyPath, text, options) { .compare(column: $0, .equal, .text($1)) }
    }

    /// The field's text starts with `prefix` once both are folded with `options`; see
    /// ``equals(_:_:options:)``.
    public static func hasPrefix<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>, _ prefix: String, options: TextMatchOptions) -> RecordPredicate {
        folded(keyPath, prefix, options) { .hasPrefix(column: $0, $1) }
    }

    /// The field's text contains `part` once both are folded with `options`; see
    /// ``equals(_:_:options:)``.
    ///
    ///     .contains(\Message.text, "creme brulee", options: [.caseInsensitive, .diacriticInsensitive])
    public static func contains<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>, _ part: String, options: TextMatchOptions) -> RecordPredicate {
        folded(keyPath, part, options) { .contains(column: $0, $1) }
    }

    /// A predicate on the field's shadow column for `options`, with `text` folded once.
    private static func folded<V: ValueConvertible>(
        _ keyPath: KeyPath<Root, V>, _ text: String, _ options: TextMatchOptions,
        _ make: @escaping @Sendable (String, String) -> RowPredicate
    ) -> RecordPredicate {
        let path = SendableKeyPath(keyPath)
        return RecordPredicate { schema in
            guard !options.isEmpty else { return make(try schema.column(for: path.path), text) }
            return make(try schema.foldedColumn(for: path.path, options: options), TextFolding.fold(text, options: options))
        }
    }

    /// Records matching both predicates.
    public static func && (lhs: RecordPredicate, rhs: RecordPredicate) -> RecordPredicate {
        RecordPredicate { schema in .and([try lhs.resolve(schema), try rhs.resolve(schema)]) }
    }

    /// Records matching either predicate.
    public static func || (lhs: RecordPredicate, rhs: RecordPredicate) -> RecordPredicate {
        RecordPredicate { schema in .or([try lhs.resolve(schema), try rhs.resolve(schema)]) }
    }

    /// Records not matching `operand`; two-valued, so `!(x < 5)` matches nulls.
    public static prefix func ! (operand: RecordPredicate) -> RecordPredicate {
        RecordPredicate { schema in .not(try operand.resolve(schema)) }
    }
}

/// A key path carried inside `@Sendable` closures. Key paths are immutable objects.
struct SendableKeyPath: @unchecked Sendable {
    let path: AnyKeyPath
    init(_ path: AnyKeyPath) { self.path = path }
}

// MARK: - Key path operators

/// Records whose field equals `rhs`; null-safe: `== nil` matches exactly the nulls.
public func == <Root: Storable, V: ValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> RecordPredicate<Root> {
    .compare(lhs, .equal, rhs)
}

/// Records whose field does not equal `rhs`; nulls included unless `rhs` is nil.
public func != <Root: Storable, V: ValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> RecordPredicate<Root> {
    .compare(lhs, .notEqual, rhs)
}

/// Records whose field is not null and sorts before `rhs`.
public func < <Root: Storable, V: ValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> RecordPredicate<Root> {
    .compare(lhs, .less, rhs)
}

/// Records whose field is not null and sorts before or equal to `rhs`.
public func <= <Root: Storable, V: ValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> RecordPredicate<Root> {
    .compare(lhs, .lessOrEqual, rhs)
}

/// Records whose field is not null and sorts after `rhs`.
public func > <Root: Storable, V: ValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> RecordPredicate<Root> {
    .compare(lhs, .greater, rhs)
}

/// Records whose field is not null and sorts after or equal to `rhs`.
public func >= <Root: Storable, V: ValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> RecordPredicate<Root> {
    .compare(lhs, .greaterOrEqual, rhs)
}
