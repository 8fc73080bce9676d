import SwiftSyntax

/// The `@Indexed`, `@Searchable`, `@Transient` and `@Column("name")` attributes on one property, which
/// `@Storable` reads (they expand to nothing themselves).
struct StorableAttributes {
    var indexed: AttributeSyntax?
    var searchable: AttributeSyntax?
    var transient: AttributeSyntax?
    var column: AttributeSyntax?

    /// The names the attributes are declared under in `ReservoirMacros`.
    static let names: Set<String> = ["Indexed", "Searchable", "Transient", "Column"]

    /// The name `@Column` gives, when its argument is one string literal without interpolation.
    var columnName: String? {
        guard case let .argumentList(arguments) = column?.arguments, arguments.count == 1,
              let first = arguments.first, first.label == nil,
              let literal = first.expression.as(StringLiteralExprSyntax.self) else { return nil }
        return literal.representedLiteralValue
    }

    /// Splits `list` into the attributes `@Storable` reads and all the others.
    static func read(_ list: AttributeListSyntax) -> (StorableAttributes, others: [AttributeListSyntax.Element]) {
        var found = StorableAttributes()
        var others: [AttributeListSyntax.Element] = []
        for element in list {
            guard case let .attribute(attribute) = element else {
                others.append(element)
                continue
            }
            switch attribute.simpleName {
            case "Indexed": found.indexed = attribute
            case "Searchable": found.searchable = attribute
            case "Transient": found.transient = attribute
            case "Column": found.column = attribute
            default: others.append(element)
            }
        }
        return (found, others)
    }
}

extension AttributeSyntax {
    /// The attribute's name without a module qualifier: `ReservoirMacros.Indexed` → `Indexed`.
    var simpleName: String {
        let name = attributeName.trimmedDescription
        guard let dot = name.lastIndex(of: ".") else { return name }
        return String(name[name.index(after: dot)...])
    }
}
