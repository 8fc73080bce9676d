import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Storable("name")`: makes a struct a `Storable` record stored as entity `name`. It
/// writes the conformance, `schema` (every stored property a field, `@Indexed` ones
/// indexed, nested values opaque, the properties it does not store named for errors),
/// and what `@RowMapped` writes, `makeRow()` and `init(row:)`; when `@Column` or
/// `@Transient` change what synthesized `Codable` would encode and the struct has no
/// `CodingKeys`, it writes those too, so `Codable` and the store agree. ``StorableLayout``
/// has the rules.
public struct StorableMacro: ExtensionMacro, MemberMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        let (record, entity) = try target(of: node, declaration)
        let members = try RecordMembers(of: record, macro: "@Storable", storable: true)
        if let schema = members.schema {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: schema, message: StorableDiagnostic.handWrittenSchema)])
        }
        let layout = try StorableLayout(members, at: node)
        let access = record.modifiers.accessPrefix
        let generic = record.mayBeGeneric(in: context)
        let mapping = RowMapping(fields: layout.fields, access: access, generic: generic)

        let entityLiteral = StringLiteralExprSyntax(content: entity).description
        let idArgument = layout.idColumn == "id" ? "" : ", idColumn: \(StringLiteralExprSyntax(content: layout.idColumn))"
        let fields = layout.fields.map { field in
            ".field(\\.\(field.name), column: \(field.columnLiteral)\(field.indexed ? ", indexed: true" : "")\(field.searchable ? ", searchable: true" : "")),"
        }
        let unstored = layout.unstored.map { property in
            ".\(property.reason)(\\.\(property.name), \(StringLiteralExprSyntax(content: property.name.unescaped))),"
        }
        var schema = "Reservoir.Schema<Self>(\(entityLiteral)\(idArgument), fields: [\n" + fields.joined(separator: "\n") + "\n])"
        if !unstored.isEmpty {
            schema += ".naming(unstored: [\n" + unstored.joined(separator: "\n") + "\n])"
        }
        // A generic type cannot hold a static stored property: it builds the schema on each use.
        let schemaDecl = generic
            ? "\(access)static var schema: Reservoir.Schema<Self> {\n\(schema)\n}"
            : "\(access)static let schema: Reservoir.Schema<Self> = \(schema)"
        let conformance = protocols.isEmpty ? "" : ": Reservoir.Storable"
        let body: DeclSyntax = """
        extension \(type.trimmed)\(raw: conformance) {
        \(raw: schemaDecl)
        \(raw: mapping.members)
        }
        """
        guard let extensionDecl = body.as(ExtensionDeclSyntax.self) else {
            throw DiagnosticsError(diagnostics: [
                Diagnostic(node: node, message: StorableDiagnostic.unparsable(type.trimmedDescription)),
            ])
        }
        return [extensionDecl]
    }

    /// The `CodingKeys` synthesized `Codable` needs to encode what the store stores, when
    /// the struct does not declare them. Problems are reported by the extension role alone.
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let (record, _) = try? target(of: node, declaration),
              let members = try? RecordMembers(of: record, macro: "@Storable", storable: true),
              let keys = (try? StorableLayout(members, at: node))?.codingKeys else { return [] }
        let cases = keys.map { key in
            key.column == key.name.unescaped ? "case \(key.name)" : "case \(key.name) = \(StringLiteralExprSyntax(content: key.column))"
        }
        // Private, as the CodingKeys synthesized Codable writes.
        return ["private enum CodingKeys: String, CodingKey {\n\(raw: cases.joined(separator: "\n"))\n}"]
    }

    /// The struct the attribute is on and the entity name it gives, or the diagnostic.
    private static func target(of node: AttributeSyntax, _ declaration: some DeclGroupSyntax) throws -> (StructDeclSyntax, String) {
        guard let record = declaration.as(StructDeclSyntax.self) else {
            throw DiagnosticsError(diagnostics: [
                Diagnostic(node: node, message: StorableDiagnostic.notAStruct(kind: declaration.kindName)),
            ])
        }
        guard case let .argumentList(arguments) = node.arguments, arguments.count == 1, let argument = arguments.first,
              argument.label == nil, let literal = argument.expression.as(StringLiteralExprSyntax.self),
              let entity = literal.representedLiteralValue else {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: node, message: StorableDiagnostic.entityName)])
        }
        guard entity.isValidName else {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: argument, message: StorableDiagnostic.invalidName("entity name", entity))])
        }
        return (record, entity)
    }
}
