import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@RowMapped`: writes a record's `makeRow()` and `init(row:)` from its stored properties,
/// the mapping synthesized `Codable` gives through `RowEncoder` and `RowDecoder`, without
/// `Codable`'s per-field dynamic dispatch.
///
/// The expansion follows the rules of synthesized `Codable`, so rows written either way
/// read back either way:
/// - the columns are the `CodingKeys` cases in their order (their raw values when given),
///   or, without a `CodingKeys` enum, the stored properties in declaration order;
/// - a `let` with an initial value is encoded but not decoded;
/// - static and computed properties are skipped.
///
/// What synthesized `Codable` would not do the same way is refused with an error at the
/// attribute: a type that is not a struct, its own `encode(to:)` or `init(from:)`, property
/// wrappers, `lazy` properties and tuple patterns.
public struct RowMappedMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let record = declaration.as(StructDeclSyntax.self) else {
            throw DiagnosticsError(diagnostics: [
                Diagnostic(node: node, message: RowMappedDiagnostic.notAStruct(kind: declaration.kindName)),
            ])
        }
        let members = try RecordMembers(of: record, macro: "@RowMapped", storable: false)
        let mapping = RowMapping(fields: RowMapping.codable(members), access: record.modifiers.accessPrefix,
                                 generic: record.mayBeGeneric(in: context))
        let body: DeclSyntax = """
        extension \(type.trimmed) {
        \(raw: mapping.members)
        }
        """
        guard let extensionDecl = body.as(ExtensionDeclSyntax.self) else {
            throw DiagnosticsError(diagnostics: [
                Diagnostic(node: node, message: RowMappedDiagnostic.unparsable(type.trimmedDescription)),
            ])
        }
        return [extensionDecl]
    }
}

enum RowMappedDiagnostic: DiagnosticMessage {
    case notAStruct(kind: String)
    case unparsable(String)

    var message: String {
        switch self {
        case let .notAStruct(kind):
            "@RowMapped applies to a struct, not to \(kind); write makeRow() and init(row:) by hand"
        case let .unparsable(type):
            "@RowMapped could not build an extension of '\(type)'; write makeRow() and init(row:) by hand"
        }
    }

    var diagnosticID: MessageID {
        let id = switch self {
        case .notAStruct: "notAStruct"
        case .unparsable: "unparsable"
        }
        return MessageID(domain: "Reservoir.RowMapped", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
