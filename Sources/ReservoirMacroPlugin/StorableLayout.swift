import SwiftDiagnostics
import SwiftSyntax

/// How `@Storable` stores a struct: its columns, the properties it leaves out, and the
/// `CodingKeys` it must write so that synthesized `Codable` gives the same rows.
///
/// - With a `CodingKeys` enum, its cases choose, order and name the columns (as for
///   `@RowMapped`); `@Column` must agree with it and `@Transient` properties must be absent
///   from it, or the attribute is refused.
/// - Without one, every stored property is a column in declaration order but those marked
///   `@Transient`, named by `@Column` or else by itself; when an attribute changes what
///   synthesized `Codable` would encode, the macro writes `CodingKeys` to match.
struct StorableLayout {
    /// The columns, in the order `makeRow()` writes them.
    var fields: [MappedField] = []
    /// Properties that are not stored, with the `Schema.UnstoredProperty` factory naming why.
    var unstored: [(name: String, reason: String)] = []
    /// The `CodingKeys` cases (name as written, column) to write, when they are needed.
    var codingKeys: [(name: String, column: String)]?
    /// The id's column.
    var idColumn = "id"

    init(_ members: RecordMembers, at node: AttributeSyntax) throws {
        var problems: [Diagnostic] = []
        for property in members.stored {
            problems += Self.check(property)
        }
        if let keys = members.codingKeys {
            readCodingKeys(keys, members, &problems)
        } else {
            for property in members.stored {
                if property.attributes.transient != nil {
                    unstored.append((property.name, "transient"))
                } else {
                    let column = property.attributes.columnName ?? property.key
                    fields.append(MappedField(name: property.name, column: column, position: fields.count,
                                              decodes: !property.encodeOnly, indexed: property.attributes.indexed != nil,
                                              searchable: property.attributes.searchable != nil))
                }
            }
            let renamed = fields.contains { field in members.stored.contains { $0.name == field.name && $0.key != field.column } }
            if renamed || !unstored.isEmpty {
                codingKeys = fields.map { ($0.name, $0.column) }
            }
        }
        unstored += members.computed.map { ($0, "computed") }

        if let id = members.stored.first(where: { $0.key == "id" }), let field = fields.first(where: { $0.name == id.name }) {
            idColumn = field.column
        } else {
            problems.append(Diagnostic(node: node, message: StorableDiagnostic.missingID))
        }
        var seen: [String: String] = [:]
        for field in fields {
            if let other = seen[field.column] {
                let property = members.stored.first { $0.name == field.name }
                problems.append(Diagnostic(node: property?.node ?? Syntax(node), message: StorableDiagnostic.duplicateColumn(field.column, other, field.name)))
            }
            seen[field.column] = field.name
            if !field.column.isValidName {
                let property = members.stored.first { $0.name == field.name }
                let place = property?.attributes.column.map(Syntax.init) ?? property?.node ?? Syntax(node)
                problems.append(Diagnostic(node: place, message: StorableDiagnostic.invalidName("column", field.column)))
            }
        }
        if !problems.isEmpty { throw DiagnosticsError(diagnostics: problems) }
    }

    /// The columns `CodingKeys` choose; `@Column` and `@Transient` must agree with them.
    private mutating func readCodingKeys(_ keys: [(name: String, column: String)], _ members: RecordMembers, _ problems: inout [Diagnostic]) {
        for key in keys {
            guard let property = members.stored.first(where: { $0.key == key.name }) else { continue }
            let attributes = property.attributes
            if let transient = attributes.transient {
                problems.append(Diagnostic(node: transient, message: StorableDiagnostic.transientInCodingKeys(property.key)))
                continue
            }
            if let column = attributes.column, let name = attributes.columnName, name != key.column {
                problems.append(Diagnostic(node: column, message: StorableDiagnostic.columnDisagrees(property.key, name, key.column)))
            }
            fields.append(MappedField(name: property.name, column: key.column, position: fields.count,
                                      decodes: !property.encodeOnly, indexed: attributes.indexed != nil,
                                      searchable: attributes.searchable != nil))
        }
        for property in members.stored where !keys.contains(where: { $0.name == property.key }) {
            let attributes = property.attributes
            if let column = attributes.column, attributes.transient == nil {
                problems.append(Diagnostic(node: column, message: StorableDiagnostic.notInCodingKeys(property.key, "Column")))
            }
            for (attribute, name) in [(attributes.indexed, "Indexed"), (attributes.searchable, "Searchable")] where attributes.transient == nil {
                if let attribute {
                    problems.append(Diagnostic(node: attribute, message: StorableDiagnostic.notInCodingKeys(property.key, name)))
                }
            }
            unstored.append((property.name, attributes.transient == nil ? "notInCodingKeys" : "transient"))
        }
    }

    /// What is wrong with one property's attributes on their own.
    private static func check(_ property: RecordMembers.Stored) -> [Diagnostic] {
        var problems: [Diagnostic] = []
        let attributes = property.attributes
        if let column = attributes.column, attributes.columnName == nil {
            problems.append(Diagnostic(node: column, message: StorableDiagnostic.columnNotLiteral))
        }
        guard let transient = attributes.transient else { return problems }
        if !property.hasDefault {
            problems.append(Diagnostic(node: transient, message: StorableDiagnostic.transientNeedsDefault(property.key)))
        }
        for (attribute, name) in [(attributes.column, "Column"), (attributes.indexed, "Indexed"), (attributes.searchable, "Searchable")] {
            if let attribute {
                problems.append(Diagnostic(node: attribute, message: StorableDiagnostic.transientAndStored(property.key, name)))
            }
        }
        return problems
    }
}

extension String {
    /// An entity or column name every backend accepts: letters, digits and `_`, not
    /// starting with a digit (the rule `Schema` checks at run time).
    var isValidName: Bool {
        guard let first = utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
