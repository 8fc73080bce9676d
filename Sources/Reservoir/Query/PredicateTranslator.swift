import Foundation

/// Translates a Foundation `Predicate`'s expression tree into a ``RowPredicate`` through a
/// record's ``Schema``, or throws `.invalidQuery` naming the expression it cannot translate.
/// The subset and where Foundation's `evaluate` answers differently: Backends.md, "Queries".
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
struct PredicateTranslator<Root: Storable> {
    let schema: Schema<Root>
    /// What each variable in scope stands for: the record, or an unwrapped optional field.
    var bindings: [PredicateExpressions.VariableID: PredicateTerm]

    init(schema: Schema<Root>, root: PredicateExpressions.VariableID) {
        self.schema = schema
        self.bindings = [root: .record]
    }

    /// The predicate's whole expression as a row predicate.
    static func translate(_ predicate: Predicate<Root>, schema: Schema<Root>) throws -> RowPredicate {
        let translator = PredicateTranslator(schema: schema, root: predicate.variable.key)
        return try translator.condition(translator.term(predicate.expression), in: predicate.expression)
    }

    // MARK: - Children

    /// The term for a child expression; throws naming it when it is outside the subset.
    func term(_ expression: some PredicateExpression) throws -> PredicateTerm {
        guard let translatable = expression as? any TranslatableExpression else {
            throw refusal(expression, "is not in the subset Reservoir translates")
        }
        return try translatable.term(in: self)
    }

    /// The term for a child expression in a position that needs a `Bool`.
    func condition(_ expression: some PredicateExpression) throws -> RowPredicate {
        try condition(term(expression), in: expression)
    }

    func condition(_ term: PredicateTerm, in expression: some PredicateExpression) throws -> RowPredicate {
        switch term {
        case let .condition(predicate): return predicate
        case let .bool(value?): return .constant(value)
        case let .field(column, _, true, false): return .compare(column: column, .equal, .integer(1))
        default: throw refusal(expression, "is not a Bool condition on stored fields")
        }
    }

    /// The term as an optional `Bool` (present part, is-nil part), or nil when it is not one.
    func optionalCondition(_ term: PredicateTerm) -> (present: RowPredicate, isNil: RowPredicate)? {
        switch term {
        case let .bool(value): return value.map { (.constant($0), .constant(false)) } ?? (.constant(false), .constant(true))
        case let .field(column, _, true, optional):
            return (.compare(column: column, .equal, .integer(1)), optional ? .compare(column: column, .equal, .null) : .constant(false))
        case let .condition(predicate): return (predicate, .constant(false))
        case let .optionalCondition(present, isNil): return (present, isNil)
        default: return nil
        }
    }

    // MARK: - Comparisons

    /// `lhs op rhs` for two translated operands: a field (or `field ?? constant`) against a
    /// constant on either side, two constants, or two `Bool` conditions with `==`/`!=`.
    func compare(_ lhs: PredicateTerm, _ op: ComparisonOperator, _ rhs: PredicateTerm, in expression: some PredicateExpression) throws -> PredicateTerm {
        // A Bool field against a Bool constant is the operator form's node: `flag == 0`, `flag != 1`, `flag == NULL`.
        if case let .field(column, _, true, _) = lhs, case let .bool(constant) = rhs {
            return .condition(.compare(column: column, op, constant.map { .integer($0 ? 1 : 0) } ?? .null))
        }
        if case .bool = lhs, case .field(_, _, true, _) = rhs {
            return try compare(rhs, op, lhs, in: expression)
        }
        if op == .equal || op == .notEqual, let left = optionalCondition(lhs), let right = optionalCondition(rhs) {
            // Optional Bools are equal when both are nil, or both present and equal.
            let same = Self.or([
                Self.and([left.isNil, right.isNil]),
                Self.and([Self.not(left.isNil), Self.not(right.isNil),
                          Self.or([Self.and([left.present, right.present]), Self.and([Self.not(left.present), Self.not(right.present)])])]),
            ])
            return .condition(op == .equal ? same : Self.not(same))
        }
        switch (lhs, rhs) {
        case let (.value(a), .value(b)):
            return .condition(.constant(QueryEvaluator.compare(a, op, b)))
        case let (.field(column, _, _, _), .value(operand)):
            return .condition(.compare(column: column, op, operand))
        case (.value, .field), (.value, .coalesced):
            return try compare(rhs, op.flipped, lhs, in: expression)
        case let (.coalesced(column, _, fallback), .value(operand)):
            // `(f ?? d) op v`: f's own comparison where f is not null, `d op v` where it is.
            let onValue = RowPredicate.compare(column: column, op, operand)
            let present = op == .notEqual || operand.isNull ? Self.and([.compare(column: column, .notEqual, .null), onValue]) : onValue
            let absent = Self.and([.compare(column: column, .equal, .null), .constant(QueryEvaluator.compare(fallback, op, operand))])
            return .condition(Self.or([present, absent]))
        case let (.field(_, a, _, _), .field(_, b, _, _)), let (.field(_, a, _, _), .coalesced(_, b, _)),
             let (.coalesced(_, a, _), .field(_, b, _, _)), let (.coalesced(_, a, _), .coalesced(_, b, _)):
            throw refusal(expression, "compares two fields, \(a) and \(b); a query compares a field with a constant only")
        default:
            throw refusal(expression, "compares operands that are not a stored field and a constant")
        }
    }

    /// `base.contains(part)` or `base.starts(with: part)`: a stored field against constant text
    /// (`make` builds the node), or two constants, answered with the library's byte semantics.
    func textMatch(_ base: some PredicateExpression, _ part: some PredicateExpression, in expression: some PredicateExpression,
                   _ make: (String, String) -> RowPredicate) throws -> PredicateTerm {
        switch (try term(base), try term(part)) {
        case let (.field(column, _, false, false), .value(.text(text))):
            return .condition(make(column, text))
        case let (.value(value), .value(.text(text))):
            return .condition(.constant(QueryEvaluator.matches(make("value", text), Row([("value", value)]))))
        default:
            throw refusal(expression, "is not a stored text field matched against constant text")
        }
    }

    // MARK: - Simplification

    /// `and` with constants folded and nested `and`s flattened, so `x == true` stays `x`.
    static func and(_ parts: [RowPredicate]) -> RowPredicate {
        var kept: [RowPredicate] = []
        for part in parts {
            switch part {
            case .constant(true): continue
            case .constant(false): return .constant(false)
            case let .and(inner): kept += inner
            default: kept.append(part)
            }
        }
        return kept.count == 1 ? kept[0] : kept.isEmpty ? .constant(true) : .and(kept)
    }

    /// `or` with constants folded and nested `or`s flattened.
    static func or(_ parts: [RowPredicate]) -> RowPredicate {
        var kept: [RowPredicate] = []
        for part in parts {
            switch part {
            case .constant(false): continue
            case .constant(true): return .constant(true)
            case let .or(inner): kept += inner
            default: kept.append(part)
            }
        }
        return kept.count == 1 ? kept[0] : kept.isEmpty ? .constant(false) : .or(kept)
    }

    /// `not` with constants and double negation folded.
    static func not(_ part: RowPredicate) -> RowPredicate {
        switch part {
        case let .constant(value): .constant(!value)
        case let .not(inner): inner
        default: .not(part)
        }
    }

    // MARK: - Errors

    /// `.invalidQuery` naming the expression's kind and the properties it reads.
    func refusal(_ expression: Any, _ reason: String) -> ReservoirError {
        let paths = Self.keyPaths(in: expression).map { String(describing: $0) }
        let on = paths.isEmpty ? "" : " on " + paths.joined(separator: ", ")
        return ReservoirError(.invalidQuery, "#Predicate<\(Root.self)>: \(Self.kind(of: expression))\(on) \(reason), so it cannot run as a query on any backend; supported: comparisons of a stored field with a constant, &&, ||, !, nil checks, ?? and optional chaining to a Bool, contains, starts(with:), a constant collection's contains($0.field), Bool fields, arithmetic on constants (or fetch and filter in Swift)")
    }

    /// "PredicateExpressions.SequenceContainsWhere" for a node of that type.
    static func kind(of expression: Any) -> String {
        let name = String(describing: type(of: expression))
        return "PredicateExpressions." + (name.split(separator: "<").first.map(String.init) ?? name)
    }

    /// The key paths an expression reads, found by reflection; used only to name them in errors.
    static func keyPaths(in expression: Any, depth: Int = 0) -> [AnyKeyPath] {
        if let path = expression as? AnyKeyPath { return [path] }
        guard depth < 24 else { return [] }
        var found: [AnyKeyPath] = []
        for child in Mirror(reflecting: expression).children {
            for path in keyPaths(in: child.value, depth: depth + 1) where !found.contains(path) { found.append(path) }
        }
        return found
    }
}

extension ComparisonOperator {
    /// The operator with its operands swapped: `5 < x` is `x > 5`.
    var flipped: ComparisonOperator {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        }
    }
}
