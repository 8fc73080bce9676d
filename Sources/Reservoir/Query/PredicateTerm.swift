import Foundation

/// What one node of a Foundation `Predicate` stands for once translated: a stored field, a
/// constant, or a condition over fields. ``PredicateTranslator`` combines them bottom-up into
/// the ``RowPredicate`` the library's own operators build.
enum PredicateTerm {
    /// The record itself (the predicate's input variable): only a key path may follow it.
    case record
    /// A stored field. `boolean` for a `Bool` or `Bool?` field, `optional` for an optional one.
    case field(column: String, keyPath: AnyKeyPath, boolean: Bool, optional: Bool)
    /// `field ?? fallback` for a non-boolean optional field.
    case coalesced(column: String, keyPath: AnyKeyPath, fallback: Value)
    /// A constant that is not a `Bool`: a captured variable, a literal, arithmetic on them.
    case value(Value)
    /// A constant collection, for `[…].contains($0.field)`.
    case list([Value])
    /// A constant `Bool` or `Bool?` (nil for an optional that is nil).
    case bool(Bool?)
    /// A `Bool` condition over fields.
    case condition(RowPredicate)
    /// A `Bool?` condition: nil where `isNil` holds, else `present`. An optional chain
    /// (`$0.note?.contains("x")`) gives one.
    case optionalCondition(present: RowPredicate, isNil: RowPredicate)
}

extension PredicateTerm {
    /// The term for a constant of a predicate (a literal or a captured variable): a `Bool`,
    /// a stored value, or a collection of stored values.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    static func constant<Root: Storable>(_ constant: Any, expression: Any, _ translator: PredicateTranslator<Root>) throws -> PredicateTerm {
        if let value = constant as? Bool { return .bool(value) }
        if type(of: constant) == Bool?.self { return .bool(constant as? Bool) }
        if let value = constant as? any ValueConvertible { return .value(try value.toValue()) }
        if let sequence = constant as? any Sequence, let values = try values(of: sequence) { return .list(values) }
        throw translator.refusal(expression, "is a constant of type \(type(of: constant)), which is not stored as a value (ValueConvertible) or a collection of them")
    }

    /// The stored values of a collection's elements, or nil when an element is not ``ValueConvertible``.
    private static func values<S: Sequence>(of sequence: S) throws -> [Value]? {
        var values: [Value] = []
        for element in sequence {
            guard let value = element as? any ValueConvertible else { return nil }
            values.append(try value.toValue())
        }
        return values
    }
}

/// Optional types, so a key path's `Output` can be asked whether it is one.
protocol OptionalValue {}
extension Optional: OptionalValue {}
