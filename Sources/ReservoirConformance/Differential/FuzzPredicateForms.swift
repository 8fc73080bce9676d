import Foundation
import Reservoir

// The query fuzzer's second form: each random `RowPredicate` written as a Foundation
// `Predicate` over a typed record of the fuzz entities, where Swift's types can express it,
// so the translation from `#Predicate` is checked against the reference evaluator too.

/// A fuzz column's value as a typed field: any stored value, compared in the library's order.
struct FuzzValue: Comparable, Codable, Sendable, ValueConvertible {
    let value: Value
    init(_ value: Value) { self.value = value }
    func toValue() throws -> Value { value }
    static func fromValue(_ value: Value) throws -> FuzzValue { FuzzValue(value) }
    static func < (lhs: FuzzValue, rhs: FuzzValue) -> Bool { lhs.value < rhs.value }
    // Codable only because Foundation's predicate expressions ask for it; predicates are
    // translated here, never encoded, so the text form is enough.
    init(from decoder: any Decoder) throws { value = .text(try decoder.singleValueContainer().decode(String.self)) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value.description)
    }
}

/// The fuzz entities' columns as values of any storage class, for comparisons and in-lists.
struct FuzzRecord: Storable {
    var id: Int
    var a: FuzzValue
    var b: FuzzValue
    var c: FuzzValue
    static let schema = Schema<FuzzRecord>("fuzz_typed", fields: [.field(\.a), .field(\.b), .field(\.c)])
}

/// The fuzz entities' columns as optional text, for `contains` and `starts(with:)`.
struct FuzzText: Storable {
    var id: Int
    var a: String?
    var b: String?
    var c: String?
    static let schema = Schema<FuzzText>("fuzz_text", fields: [.field(\.a), .field(\.b), .field(\.c)])
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
enum FuzzPredicateForms {
    typealias Condition = any StandardPredicateExpression<Bool>

    /// `predicate` written as a Foundation `Predicate` and translated back through the
    /// library, or nil when neither typed record can express it. Operands go on either side
    /// as `g` decides.
    static func translated(_ predicate: RowPredicate, _ g: inout SeededGenerator) throws -> RowPredicate? {
        let flips = (0..<64).map { _ in g.next() % 2 == 0 }
        var probe = flips.makeIterator()
        if typed(predicate, PredicateExpressions.Variable<FuzzRecord>(), &probe) != nil {
            let form = Predicate<FuzzRecord> { record in
                var sides = flips.makeIterator()
                return typed(predicate, record, &sides) ?? PredicateExpressions.Value(false)
            }
            return try RecordPredicate(form).expression()
        }
        probe = flips.makeIterator()
        if text(predicate, PredicateExpressions.Variable<FuzzText>(), &probe) != nil {
            let form = Predicate<FuzzText> { record in
                var sides = flips.makeIterator()
                return text(predicate, record, &sides) ?? PredicateExpressions.Value(false)
            }
            return try RecordPredicate(form).expression()
        }
        return nil
    }

    /// The sort written as `SortDescriptor`s and translated back.
    static func translated(_ sort: [SortTerm]) throws -> [SortTerm] {
        let descriptors: [SortDescriptor<FuzzRecord>] = sort.map { term in
            let order: SortOrder = term.ascending ? .forward : .reverse
            switch term.column {
            case "a": return SortDescriptor(\.a, order: order)
            case "b": return SortDescriptor(\.b, order: order)
            case "c": return SortDescriptor(\.c, order: order)
            default: return SortDescriptor(\.id, order: order)
            }
        }
        return try FetchRequest<FuzzRecord>(sortBy: descriptors).query().sort
    }

    // MARK: - The typed form: comparisons and in-lists of any value

    static func typed(_ predicate: RowPredicate, _ record: PredicateExpressions.Variable<FuzzRecord>,
                      _ sides: inout IndexingIterator<[Bool]>) -> Condition? {
        switch predicate {
        case let .compare(column, op, operand):
            if column == "id" {
                guard case let .integer(number) = operand else { return nil }
                return compare(PredicateExpressions.KeyPath(root: record, keyPath: \FuzzRecord.id), op, Int(number), flip: sides.next() ?? false)
            }
            return compare(field(column, record), op, FuzzValue(operand), flip: sides.next() ?? false)
        case let .isIn(column, values):
            if column == "id" {
                var numbers: [Int] = []
                for value in values {
                    guard case let .integer(number) = value else { return nil }
                    numbers.append(Int(number))
                }
                return PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(numbers),
                                                             element: PredicateExpressions.KeyPath(root: record, keyPath: \FuzzRecord.id))
            }
            return PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(values.map(FuzzValue.init)), element: field(column, record))
        case .hasPrefix, .contains:
            return nil
        default:
            return logic(predicate) { typed($0, record, &sides) }
        }
    }

    static func field(_ column: String, _ record: PredicateExpressions.Variable<FuzzRecord>) -> PredicateExpressions.KeyPath<PredicateExpressions.Variable<FuzzRecord>, FuzzValue> {
        switch column {
        case "a": PredicateExpressions.KeyPath(root: record, keyPath: \FuzzRecord.a)
        case "b": PredicateExpressions.KeyPath(root: record, keyPath: \FuzzRecord.b)
        default: PredicateExpressions.KeyPath(root: record, keyPath: \FuzzRecord.c)
        }
    }

    /// `field op constant`, or `constant op' field` when `flip`.
    static func compare<Field: StandardPredicateExpression, Constant: Comparable & Codable & Sendable>(
        _ field: Field, _ op: ComparisonOperator, _ constant: Constant, flip: Bool
    ) -> Condition where Field.Output == Constant {
        let value = PredicateExpressions.Value(constant)
        switch op {
        case .equal: return flip ? PredicateExpressions.Equal(lhs: value, rhs: field) : PredicateExpressions.Equal(lhs: field, rhs: value)
        case .notEqual: return flip ? PredicateExpressions.NotEqual(lhs: value, rhs: field) : PredicateExpressions.NotEqual(lhs: field, rhs: value)
        case .less: return ordered(field, .lessThan, value, .greaterThan, flip)
        case .lessOrEqual: return ordered(field, .lessThanOrEqual, value, .greaterThanOrEqual, flip)
        case .greater: return ordered(field, .greaterThan, value, .lessThan, flip)
        case .greaterOrEqual: return ordered(field, .greaterThanOrEqual, value, .lessThanOrEqual, flip)
        }
    }

    private static func ordered<Field: StandardPredicateExpression, Constant: StandardPredicateExpression>(
        _ field: Field, _ op: PredicateExpressions.ComparisonOperator, _ constant: Constant,
        _ flipped: PredicateExpressions.ComparisonOperator, _ flip: Bool
    ) -> Condition where Field.Output == Constant.Output, Field.Output: Comparable {
        flip ? PredicateExpressions.Comparison(lhs: constant, rhs: field, op: flipped) : PredicateExpressions.Comparison(lhs: field, rhs: constant, op: op)
    }

    // MARK: - The text form: text matching, and comparisons with text or nil

    static func text(_ predicate: RowPredicate, _ record: PredicateExpressions.Variable<FuzzText>,
                     _ sides: inout IndexingIterator<[Bool]>) -> Condition? {
        // The id is an Int here: text matching on it has no typed form.
        if case .isIn("id", _) = predicate { return nil }
        if case .hasPrefix("id", _) = predicate { return nil }
        if case .contains("id", _) = predicate { return nil }
        switch predicate {
        case let .compare(column, op, operand):
            if column == "id" {
                guard case let .integer(number) = operand else { return nil }
                return compare(PredicateExpressions.KeyPath(root: record, keyPath: \FuzzText.id), op, Int(number), flip: sides.next() ?? false)
            }
            let flip = sides.next() ?? false
            switch (op, operand) {
            case (.equal, .null), (.notEqual, .null), (.equal, .text), (.notEqual, .text):
                let constant = PredicateExpressions.Value(operand.isNull ? nil : operand.textValue)
                let field = textField(column, record)
                if op == .equal { return flip ? PredicateExpressions.Equal(lhs: constant, rhs: field) : PredicateExpressions.Equal(lhs: field, rhs: constant) }
                return flip ? PredicateExpressions.NotEqual(lhs: constant, rhs: field) : PredicateExpressions.NotEqual(lhs: field, rhs: constant)
            case let (_, .text(part)):
                // `$0.a.flatMap { $0 < "x" } == true`: an ordering never matches null.
                let (forward, backward): (PredicateExpressions.ComparisonOperator, PredicateExpressions.ComparisonOperator) = switch op {
                case .less: (.lessThan, .greaterThan)
                case .lessOrEqual: (.lessThanOrEqual, .greaterThanOrEqual)
                case .greater: (.greaterThan, .lessThan)
                default: (.greaterThanOrEqual, .lessThanOrEqual)
                }
                if flip {
                    return unwrapped(column, record) { PredicateExpressions.Comparison(lhs: PredicateExpressions.Value(part), rhs: $0, op: backward) }
                }
                return unwrapped(column, record) { PredicateExpressions.Comparison(lhs: $0, rhs: PredicateExpressions.Value(part), op: forward) }
            default:
                return nil
            }
        case let .isIn(column, values):
            var texts: [String?] = []
            for value in values {
                switch value {
                case .null: texts.append(nil)
                case let .text(text): texts.append(text)
                default: return nil
                }
            }
            return PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(texts), element: textField(column, record))
        case let .hasPrefix(column, prefix):
            return unwrapped(column, record) { PredicateExpressions.SequenceStartsWith(base: $0, prefix: PredicateExpressions.Value(prefix)) }
        case let .contains(column, part):
            return unwrapped(column, record) { PredicateExpressions.CollectionContainsCollection(base: $0, other: PredicateExpressions.Value(part)) }
        default:
            return logic(predicate) { text($0, record, &sides) }
        }
    }

    static func textField(_ column: String, _ record: PredicateExpressions.Variable<FuzzText>) -> PredicateExpressions.KeyPath<PredicateExpressions.Variable<FuzzText>, String?> {
        switch column {
        case "a": PredicateExpressions.KeyPath(root: record, keyPath: \FuzzText.a)
        case "b": PredicateExpressions.KeyPath(root: record, keyPath: \FuzzText.b)
        default: PredicateExpressions.KeyPath(root: record, keyPath: \FuzzText.c)
        }
    }

    /// `$0.column.flatMap { make($0) } == true`: the condition where the column holds text.
    static func unwrapped<C: StandardPredicateExpression<Bool>>(_ column: String, _ record: PredicateExpressions.Variable<FuzzText>,
                                                                _ make: (PredicateExpressions.Variable<String>) -> C) -> Condition {
        PredicateExpressions.Equal(lhs: PredicateExpressions.OptionalFlatMap(textField(column, record), make), rhs: PredicateExpressions.Value(Bool?.some(true)))
    }

    // MARK: - Logic

    static func logic(_ predicate: RowPredicate, _ part: (RowPredicate) -> Condition?) -> Condition? {
        switch predicate {
        case let .constant(value):
            return PredicateExpressions.Value(value)
        case let .and(parts), let .or(parts):
            var conditions: [Condition] = []
            for inner in parts {
                guard let condition = part(inner) else { return nil }
                conditions.append(condition)
            }
            let isAnd = if case .and = predicate { true } else { false }
            guard var result = conditions.first else { return PredicateExpressions.Value(isAnd) }
            for condition in conditions.dropFirst() { result = isAnd ? conjunction(result, condition) : disjunction(result, condition) }
            return result
        case let .not(inner):
            return part(inner).map { negation($0) }
        default:
            return nil
        }
    }

    static func conjunction(_ lhs: some StandardPredicateExpression<Bool>, _ rhs: some StandardPredicateExpression<Bool>) -> Condition {
        PredicateExpressions.Conjunction(lhs: lhs, rhs: rhs)
    }

    static func disjunction(_ lhs: some StandardPredicateExpression<Bool>, _ rhs: some StandardPredicateExpression<Bool>) -> Condition {
        PredicateExpressions.Disjunction(lhs: lhs, rhs: rhs)
    }

    static func negation(_ wrapped: some StandardPredicateExpression<Bool>) -> Condition {
        PredicateExpressions.Negation(wrapped)
    }
}

private extension Value {
    var textValue: String? {
        if case let .text(text) = self { return text }
        return nil
    }
}
