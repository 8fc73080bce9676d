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
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

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
        let fields = try StoredFields(of: record)
        let access = record.modifiers.accessPrefix
        // Generic types, and types nested in one, cannot have static stored properties; a
        // nested type's context is not always visible here (an extension of a generic
        // type), so only a top-level struct shares one columns array across its rows.
        let generic = record.genericParameterClause != nil || !context.lexicalContext.isEmpty

        let columnsLiteral = "[" + fields.encoded.map(\.columnLiteral).joined(separator: ", ") + "]"
        let columns = generic ? columnsLiteral : "Self.rowMappedColumns"
        let values = fields.encoded.map { field in
            "try Reservoir.Value.encoding(self.\(field.name), column: \(field.columnLiteral))"
        }
        // The position is where makeRow() puts the column, a hint that spares a search.
        let assignments = fields.decoded.map { field in
            "self.\(field.name) = try row.decode(\(field.columnLiteral), at: \(field.position))"
        }
        let staticColumns = generic ? "" : "\(access)static let rowMappedColumns: [String] = \(columnsLiteral)\n"
        let valueList = values.isEmpty ? "" : "\n" + values.map { "    \($0)," }.joined(separator: "\n") + "\n"
        let body: DeclSyntax = """
        extension \(type.trimmed) {
        \(raw: staticColumns)\(raw: access)func makeRow() throws -> Reservoir.Row {
        let values: [Reservoir.Value] = [\(raw: valueList)]
        return Reservoir.Row(columns: \(raw: columns), values: values)
        }
        \(raw: access)init(row: borrowing Reservoir.Row) throws {
        \(raw: assignments.joined(separator: "\n"))
        }
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

/// One stored property as a column.
struct MappedField {
    /// The property's name as written in source (backticks kept).
    var name: String
    var column: String
    /// Its place among the columns `makeRow()` writes.
    var position: Int

    /// The column name as Swift source, escaped.
    var columnLiteral: String { StringLiteralExprSyntax(content: column).description }
}

/// The columns a struct encodes and the properties its decoding assigns, following the
/// rules of synthesized `Codable`.
struct StoredFields {
    var encoded: [MappedField] = []
    var decoded: [MappedField] = []

    init(of record: StructDeclSyntax) throws {
        var problems: [Diagnostic] = []
        var properties: [(name: String, key: String, decodes: Bool)] = []
        var codingKeys: [(name: String, column: String)]?

        for member in record.memberBlock.members {
            if let enumDecl = member.decl.as(EnumDeclSyntax.self), enumDecl.name.text == "CodingKeys" {
                codingKeys = enumDecl.codingKeyCases
            } else if let function = member.decl.as(FunctionDeclSyntax.self), function.isEncodeTo {
                problems.append(Diagnostic(node: function.name, message: RowMappedDiagnostic.customCodable("encode(to:)")))
            } else if let initializer = member.decl.as(InitializerDeclSyntax.self), initializer.isInitFrom {
                problems.append(Diagnostic(node: initializer.initKeyword, message: RowMappedDiagnostic.customCodable("init(from:)")))
            } else if let variable = member.decl.as(VariableDeclSyntax.self) {
                guard !variable.modifiers.contains(where: { [.keyword(.static), .keyword(.class)].contains($0.name.tokenKind) }) else { continue }
                let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
                for binding in variable.bindings where binding.isStored {
                    guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
                        problems.append(Diagnostic(node: binding.pattern, message: RowMappedDiagnostic.tuplePattern))
                        continue
                    }
                    if let wrapper = variable.attributes.first {
                        problems.append(Diagnostic(node: wrapper, message: RowMappedDiagnostic.propertyWrapper(pattern.identifier.text)))
                        continue
                    }
                    if variable.modifiers.contains(where: { $0.name.tokenKind == .keyword(.lazy) }) {
                        problems.append(Diagnostic(node: pattern, message: RowMappedDiagnostic.lazy(pattern.identifier.text)))
                        continue
                    }
                    let name = pattern.identifier.text
                    properties.append((name, name.unescaped, !(isLet && binding.initializer != nil)))
                }
            }
        }
        if !problems.isEmpty { throw DiagnosticsError(diagnostics: problems) }

        // CodingKeys choose, order and name the columns; without them every property is
        // one, under its own name.
        let columns = codingKeys.map { keys in
            keys.compactMap { key in properties.first { $0.key == key.name }.map { ($0, key.column) } }
        } ?? properties.map { ($0, $0.key) }
        for (property, column) in columns {
            let field = MappedField(name: property.name, column: column, position: encoded.count)
            encoded.append(field)
            if property.decodes { decoded.append(field) }
        }
    }
}

enum RowMappedDiagnostic: DiagnosticMessage {
    case notAStruct(kind: String)
    case customCodable(String)
    case propertyWrapper(String)
    case lazy(String)
    case tuplePattern
    case unparsable(String)

    var message: String {
        switch self {
        case let .notAStruct(kind):
            "@RowMapped applies to a struct, not to \(kind); write makeRow() and init(row:) by hand"
        case let .customCodable(requirement):
            "@RowMapped maps stored properties the way synthesized Codable does, but this type writes its own \(requirement); write makeRow() and init(row:) by hand to match it"
        case let .propertyWrapper(name):
            "@RowMapped cannot map '\(name)': synthesized Codable encodes a property wrapper itself, not its wrapped value; write makeRow() and init(row:) by hand"
        case let .lazy(name):
            "@RowMapped cannot map the lazy property '\(name)'; make it a computed or a plain stored property"
        case .tuplePattern:
            "@RowMapped needs one name per stored property; declare each on its own instead of through a tuple pattern"
        case let .unparsable(type):
            "@RowMapped could not build an extension of '\(type)'; write makeRow() and init(row:) by hand"
        }
    }

    var diagnosticID: MessageID {
        let id = switch self {
        case .notAStruct: "notAStruct"
        case .customCodable: "customCodable"
        case .propertyWrapper: "propertyWrapper"
        case .lazy: "lazy"
        case .tuplePattern: "tuplePattern"
        case .unparsable: "unparsable"
        }
        return MessageID(domain: "Reservoir.RowMapped", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}

extension PatternBindingSyntax {
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
