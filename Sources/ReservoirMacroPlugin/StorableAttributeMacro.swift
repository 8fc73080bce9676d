import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Indexed`, `@Searchable`, `@Transient` and `@Column("name")`: markers that `@Storable` reads from the
/// struct's members. They expand to nothing; on their own they only check that they stand
/// where `@Storable` will see them, since anywhere else they would silently do nothing.
public struct StorableAttributeMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        let name = node.simpleName
        guard let variable = declaration.as(VariableDeclSyntax.self) else {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: node, message: AttributeDiagnostic.notAProperty(name))])
        }
        if variable.isStatic {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: node, message: AttributeDiagnostic.staticProperty(name))])
        }
        if let binding = variable.bindings.first(where: { !$0.isStored }) {
            let property = binding.pattern.trimmedDescription
            throw DiagnosticsError(diagnostics: [Diagnostic(node: node, message: AttributeDiagnostic.computed(name, property))])
        }
        let enclosing = context.lexicalContext.first?.as(StructDeclSyntax.self)
        let storable = enclosing?.attributes.contains { element in
            if case let .attribute(attribute) = element { return attribute.simpleName == "Storable" }
            return false
        } ?? false
        if !storable {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: node, message: AttributeDiagnostic.outsideStorable(name))])
        }
        return []
    }
}

enum AttributeDiagnostic: DiagnosticMessage {
    case notAProperty(String)
    case staticProperty(String)
    case computed(String, String)
    case outsideStorable(String)

    var message: String {
        switch self {
        case let .notAProperty(attribute):
            "@\(attribute) applies to a stored property of a @Storable struct"
        case let .staticProperty(attribute):
            "@\(attribute) has no effect on a static property, which is never stored with a record"
        case let .computed(attribute, property):
            "@\(attribute) has no effect on '\(property)', a computed property, which is never stored"
        case let .outsideStorable(attribute):
            "@\(attribute) has an effect only on a stored property of a struct declared @Storable(\"name\")"
        }
    }

    var diagnosticID: MessageID {
        let id = switch self {
        case .notAProperty: "notAProperty"
        case .staticProperty: "staticProperty"
        case .computed: "computed"
        case .outsideStorable: "outsideStorable"
        }
        return MessageID(domain: "Reservoir.StorableAttribute", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
