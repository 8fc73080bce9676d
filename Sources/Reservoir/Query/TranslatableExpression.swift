import Foundation

/// A Foundation predicate expression ``PredicateTranslator`` can translate. Only the
/// expressions listed in this file conform; any other node is refused by name.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
protocol TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm
}

// MARK: - Leaves: the record, its fields, constants

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Variable: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        guard let bound = translator.bindings[key] else { throw translator.refusal(self, "names a variable out of scope") }
        return bound
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.KeyPath: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        guard case .record = try translator.term(root) else {
            throw translator.refusal(self, "reads \(keyPath) from a value rather than from the record (a member of a field's value, or of a nested value, is not stored)")
        }
        let column: String
        do {
            column = try translator.schema.column(for: keyPath)
        } catch let error as ReservoirError {
            throw ReservoirError(.invalidQuery, "#Predicate<\(Record.self)>: \(PredicateTranslator<Record>.kind(of: self)): " + error.message)
        }
        let boolean = Output.self == Bool.self || Output.self == Bool?.self
        let optional = Output.self is any OptionalValue.Type
        return .field(column: column, keyPath: keyPath, boolean: boolean, optional: optional)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Value: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        try PredicateTerm.constant(value, expression: self, translator)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilLiteral: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        Wrapped.self == Bool.self ? .bool(nil) : .value(.null)
    }
}

// MARK: - Comparisons

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Equal: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        try translator.compare(translator.term(lhs), .equal, translator.term(rhs), in: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NotEqual: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        try translator.compare(translator.term(lhs), .notEqual, translator.term(rhs), in: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Comparison: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        let operation: ComparisonOperator = switch op {
        case .lessThan: .less
        case .lessThanOrEqual: .lessOrEqual
        case .greaterThan: .greater
        case .greaterThanOrEqual: .greaterOrEqual
        }
        return try translator.compare(translator.term(lhs), operation, translator.term(rhs), in: self)
    }
}

// MARK: - Logic

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Conjunction: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        .condition(PredicateTranslator<Record>.and([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Disjunction: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        .condition(PredicateTranslator<Record>.or([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Negation: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        .condition(PredicateTranslator<Record>.not(try translator.condition(wrapped)))
    }
}

// MARK: - Optionals

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilCoalesce: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        let optional = try translator.term(lhs)
        let fallback = try translator.term(rhs)
        switch (optional, fallback) {
        case let (.value(value), _):
            return value.isNull ? fallback : optional
        case let (.bool(value), _):
            return value.map { PredicateTerm.bool($0) } ?? fallback
        case let (.field(column, keyPath, false, true), .value(fallback)):
            return .coalesced(column: column, keyPath: keyPath, fallback: fallback)
        default:
            guard let (present, isNil) = translator.optionalCondition(optional) else {
                throw translator.refusal(self, "coalesces something other than an optional stored field or an optional Bool with a constant")
            }
            let otherwise = try translator.condition(fallback, in: rhs)
            return .condition(PredicateTranslator<Record>.or([
                PredicateTranslator<Record>.and([PredicateTranslator<Record>.not(isNil), present]),
                PredicateTranslator<Record>.and([isNil, otherwise]),
            ]))
        }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.OptionalFlatMap: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        guard case let .field(column, keyPath, boolean, true) = try translator.term(wrapped) else {
            throw translator.refusal(self, "unwraps something other than an optional stored field")
        }
        var inner = translator
        inner.bindings[variable.key] = .field(column: column, keyPath: keyPath, boolean: boolean, optional: false)
        let isNil = RowPredicate.compare(column: column, .equal, .null)
        switch try inner.term(transform) {
        case let .condition(present):
            return .optionalCondition(present: present, isNil: isNil)
        case let .field(unwrapped, _, _, _) where unwrapped == column:
            return .field(column: column, keyPath: keyPath, boolean: boolean, optional: true)
        default:
            throw translator.refusal(self, "maps an optional field to something other than a Bool condition")
        }
    }
}

// MARK: - Text and collections

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.CollectionContainsCollection: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        try translator.textMatch(base, other, in: self) { .contains(column: $0, $1) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceStartsWith: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        try translator.textMatch(base, prefix, in: self) { .hasPrefix(column: $0, $1) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceContains: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        switch (try translator.term(sequence), try translator.term(element)) {
        case let (.list(values), .field(column, _, _, _)):
            return .condition(.isIn(column: column, values))
        case let (.list(values), .value(value)):
            return .condition(.constant(values.contains { QueryEvaluator.compare($0, .equal, value) }))
        default:
            throw translator.refusal(self, "is not a constant collection's contains(a stored field)")
        }
    }
}

#if canImport(Darwin)
// Foundation on Apple platforms only: swift-foundation builds this expression for
// FOUNDATION_FRAMEWORK alone, so Linux programs cannot write it (and Linux builds, where the
// tests run, do not compile this; its members are `root` and `other` as Apple documents).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.StringLocalizedStandardContains: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        guard case let .field(_, keyPath, _, _) = try translator.term(root), case let .value(.text(part)) = try translator.term(other) else {
            throw translator.refusal(self, "is not a stored text field's localizedStandardContains(a constant)")
        }
        let options: TextMatchOptions = [.caseInsensitive, .diacriticInsensitive]
        do {
            let column = try translator.schema.foldedColumn(for: keyPath, options: options)
            return .condition(.contains(column: column, TextFolding.fold(part, options: options)))
        } catch let error as ReservoirError {
            throw ReservoirError(.invalidQuery, "#Predicate<\(Record.self)>: localizedStandardContains: " + error.message)
        }
    }
}
#endif

// MARK: - Arithmetic on constants

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Arithmetic: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        guard case let .value(a) = try translator.term(lhs), case let .value(b) = try translator.term(rhs) else {
            throw translator.refusal(self, "does arithmetic on a field; a query compares a field with a constant, so only constants may be computed")
        }
        let operation: ConstantArithmetic.Operation = switch op {
        case .add: .add
        case .subtract: .subtract
        case .multiply: .multiply
        }
        return .value(try ConstantArithmetic.apply(operation, a, b) { translator.refusal(self, $0) })
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.UnaryMinus: TranslatableExpression {
    func term<Record: Storable>(in translator: PredicateTranslator<Record>) throws -> PredicateTerm {
        guard case let .value(a) = try translator.term(wrapped) else {
            throw translator.refusal(self, "negates a field; only constants may be computed")
        }
        return .value(try ConstantArithmetic.apply(.subtract, .integer(0), a) { translator.refusal(self, $0) })
    }
}
