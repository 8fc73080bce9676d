import SwiftSyntax
import SwiftSyntaxMacros

extension PatternBindingSyntax {
    /// A computed property whose getter is `async` or `throws`, which no key path can name.
    var hasEffects: Bool {
        guard case let .accessors(list) = accessorBlock?.accessors else { return false }
        return list.contains { $0.effectSpecifiers?.asyncSpecifier != nil || $0.effectSpecifiers?.throwsClause != nil }
    }

    /// False for a computed property: a getter, or accessors other than observers.
    var isStored: Bool {
        switch accessorBlock?.accessors {
        case .none:
            return true
        case .getter:
            return false
        case let .accessors(list):
            return list.allSatisfy { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
        }
    }
}

extension EnumDeclSyntax {
    /// Each case's name and the string it codes as: its raw value when it has one.
    var codingKeyCases: [(name: String, column: String)] {
        memberBlock.members.flatMap { member -> [(name: String, column: String)] in
            guard let caseDecl = member.decl.as(EnumCaseDeclSyntax.self) else { return [] }
            return caseDecl.elements.map { element in
                let name = element.name.text.unescaped
                if let literal = element.rawValue?.value.as(StringLiteralExprSyntax.self),
                   let column = literal.representedLiteralValue {
                    return (name, column)
                }
                return (name, name)
            }
        }
    }
}

extension FunctionDeclSyntax {
    var isEncodeTo: Bool {
        name.text == "encode" && signature.parameterClause.parameters.map(\.firstName.text) == ["to"]
    }
}

extension InitializerDeclSyntax {
    var isInitFrom: Bool {
        signature.parameterClause.parameters.map(\.firstName.text) == ["from"]
    }
}

extension DeclModifierListSyntax {
    /// The access modifier the generated members need to witness `Storable` for this type.
    var accessPrefix: String {
        for modifier in self {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }
}

extension DeclGroupSyntax {
    var kindName: String {
        switch Syntax(self).kind {
        case .classDecl: "a class"
        case .enumDecl: "an enum"
        case .actorDecl: "an actor"
        case .protocolDecl: "a protocol"
        case .extensionDecl: "an extension"
        default: "this declaration"
        }
    }
}

extension String {
    /// The name without the backticks that escape a keyword (`` `default` ``).
    var unescaped: String {
        hasPrefix("`") && hasSuffix("`") && count >= 2 ? String(dropFirst().dropLast()) : self
    }
}

extension VariableDeclSyntax {
    var isStatic: Bool {
        modifiers.contains { [.keyword(.static), .keyword(.class)].contains($0.name.tokenKind) }
    }
}

extension TypeSyntax {
    /// Written as an optional: `T?`, `T!` or `Optional<T>`.
    var isOptional: Bool {
        if `is`(OptionalTypeSyntax.self) || `is`(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return true }
        if let named = self.as(IdentifierTypeSyntax.self) { return named.name.text == "Optional" }
        if let member = self.as(MemberTypeSyntax.self) { return member.name.text == "Optional" }
        return false
    }
}

extension StructDeclSyntax {
    /// Generic types, and types nested in one, cannot have static stored properties; a
    /// nested type's context is not always visible here (an extension of a generic type),
    /// so only a top-level non-generic struct counts as surely not generic.
    func mayBeGeneric(in context: some MacroExpansionContext) -> Bool {
        genericParameterClause != nil || !context.lexicalContext.isEmpty
    }
}
