import SwiftDiagnostics
import SwiftSyntax

/// What a struct's body declares that row mapping depends on, read once for `@RowMapped`
/// and `@Storable`: its stored and computed instance properties, its `CodingKeys`, and
/// anything synthesized `Codable` would map differently (reported as diagnostics).
struct RecordMembers {
    /// One stored instance property.
    struct Stored {
        /// The name as written in source (backticks kept).
        var name: String
        /// The name without backticks, as a coding key spells it.
        var key: String
        /// A `let` with an initial value: `Codable` encodes it but never decodes it.
        var encodeOnly: Bool
        /// It starts with a value: an initializer, or an optional `var`'s implicit `nil`.
        var hasDefault: Bool
        /// The attributes `@Storable` reads on it.
        var attributes: StorableAttributes
        /// Where diagnostics about it point.
        var node: Syntax
    }

    var stored: [Stored] = []
    /// Computed instance properties a key path can name, by name as written.
    var computed: [String] = []
    /// Each `CodingKeys` case's name and the string it codes as, when the struct declares them.
    var codingKeys: [(name: String, column: String)]?
    /// A `schema` member written by hand.
    var schema: Syntax?

    /// Reads `record`'s members. `macro` names the attribute in messages; `storable` says
    /// whether `@Indexed`, `@Transient` and `@Column` are understood (else they count as
    /// property wrappers, which are refused).
    init(of record: StructDeclSyntax, macro: String, storable: Bool) throws {
        var problems: [Diagnostic] = []
        for member in record.memberBlock.members {
            if let enumDecl = member.decl.as(EnumDeclSyntax.self), enumDecl.name.text == "CodingKeys" {
                codingKeys = enumDecl.codingKeyCases
            } else if let function = member.decl.as(FunctionDeclSyntax.self), function.isEncodeTo {
                problems.append(Diagnostic(node: function.name, message: MemberDiagnostic.customCodable(macro, "encode(to:)")))
            } else if let initializer = member.decl.as(InitializerDeclSyntax.self), initializer.isInitFrom {
                problems.append(Diagnostic(node: initializer.initKeyword, message: MemberDiagnostic.customCodable(macro, "init(from:)")))
            } else if let variable = member.decl.as(VariableDeclSyntax.self) {
                if variable.isStatic {
                    if variable.bindings.contains(where: { $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text == "schema" }) {
                        schema = Syntax(variable)
                    }
                    continue
                }
                read(variable, macro: macro, storable: storable, problems: &problems)
            }
        }
        if !problems.isEmpty { throw DiagnosticsError(diagnostics: problems) }
    }

    private mutating func read(_ variable: VariableDeclSyntax, macro: String, storable: Bool, problems: inout [Diagnostic]) {
        let (attributes, others) = storable ? StorableAttributes.read(variable.attributes) : (StorableAttributes(), Array(variable.attributes))
        let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
        for binding in variable.bindings {
            guard binding.isStored else {
                // A key path cannot name a property whose getter is async or throws, and one
                // with attributes (a global actor, say) may not be Sendable to name.
                if let pattern = binding.pattern.as(IdentifierPatternSyntax.self), !binding.hasEffects, others.isEmpty {
                    computed.append(pattern.identifier.text)
                }
                continue
            }
            guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
                problems.append(Diagnostic(node: binding.pattern, message: MemberDiagnostic.tuplePattern(macro)))
                continue
            }
            let name = pattern.identifier.text
            if let wrapper = others.first {
                problems.append(Diagnostic(node: wrapper, message: MemberDiagnostic.propertyWrapper(macro, name)))
                continue
            }
            if variable.modifiers.contains(where: { $0.name.tokenKind == .keyword(.lazy) }) {
                problems.append(Diagnostic(node: pattern, message: MemberDiagnostic.lazy(macro, name)))
                continue
            }
            let initialized = binding.initializer != nil
            let implicitNil = !isLet && binding.typeAnnotation?.type.isOptional == true
            stored.append(Stored(name: name, key: name.unescaped, encodeOnly: isLet && initialized,
                                 hasDefault: initialized || implicitNil, attributes: attributes, node: Syntax(pattern)))
        }
    }
}

/// Problems with a struct's members that keep a macro from mapping it as `Codable` would.
enum MemberDiagnostic: DiagnosticMessage {
    case customCodable(String, String)
    case propertyWrapper(String, String)
    case lazy(String, String)
    case tuplePattern(String)

    var message: String {
        switch self {
        case let .customCodable(macro, requirement):
            "\(macro) maps stored properties the way synthesized Codable does, but this type writes its own \(requirement); write makeRow() and init(row:) by hand to match it"
        case let .propertyWrapper(macro, name):
            "\(macro) cannot map '\(name)': synthesized Codable encodes a property wrapper itself, not its wrapped value; write makeRow() and init(row:) by hand"
        case let .lazy(macro, name):
            "\(macro) cannot map the lazy property '\(name)'; make it a computed or a plain stored property"
        case let .tuplePattern(macro):
            "\(macro) needs one name per stored property; declare each on its own instead of through a tuple pattern"
        }
    }

    var diagnosticID: MessageID {
        let id = switch self {
        case .customCodable: "customCodable"
        case .propertyWrapper: "propertyWrapper"
        case .lazy: "lazy"
        case .tuplePattern: "tuplePattern"
        }
        return MessageID(domain: "Reservoir.RecordMembers", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
