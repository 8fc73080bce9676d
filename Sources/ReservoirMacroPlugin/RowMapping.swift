import SwiftSyntax
import SwiftSyntaxBuilder

/// One stored property as a column.
struct MappedField {
    /// The property's name as written in source (backticks kept).
    var name: String
    var column: String
    /// Its place among the columns `makeRow()` writes.
    var position: Int
    /// `init(row:)` reads it back (a `let` with an initial value is written only).
    var decodes: Bool = true
    /// `@Indexed`: the schema asks backends for an ordered index on it.
    var indexed: Bool = false
    /// `@Searchable`: the core keeps folded shadow columns of it for folded predicates.
    var searchable: Bool = false

    /// The column name as Swift source, escaped.
    var columnLiteral: String { StringLiteralExprSyntax(content: column).description }
}

/// The members `@RowMapped` and `@Storable` both write: `makeRow()`, `init(row:)`,
/// `init(reader:)` (the same fields, read from a fetch's ``RowReader``) with `readsColumns`, and for
/// a top-level non-generic struct the shared column names, `rowMappedColumns`.
struct RowMapping {
    var fields: [MappedField]
    /// The access modifier the members need to witness `Storable` (`"public "`, or empty).
    var access: String
    /// Whether the struct may be generic: such types cannot hold static stored properties.
    var generic: Bool

    /// The members as source text, for the body of an extension.
    var members: String {
        let columnsLiteral = "[" + fields.map(\.columnLiteral).joined(separator: ", ") + "]"
        let columns = generic ? columnsLiteral : "Self.rowMappedColumns"
        let values = fields.map { field in
            "try Reservoir.Value.encoding(self.\(field.name), column: \(field.columnLiteral))"
        }
        // The position is where makeRow() puts the column, a hint that spares a search.
        func assignments(from reader: String) -> String {
            fields.filter(\.decodes).map { field in
                "self.\(field.name) = try \(reader).decode(\(field.columnLiteral), at: \(field.position))"
            }.joined(separator: "\n")
        }
        let staticColumns = generic ? "" : "\(access)static let rowMappedColumns: [String] = \(columnsLiteral)\n"
        let valueList = values.isEmpty ? "" : "\n" + values.map { "    \($0)," }.joined(separator: "\n") + "\n"
        return """
        \(staticColumns)\(access)func makeRow() throws -> Reservoir.Row {
        let values: [Reservoir.Value] = [\(valueList)]
        return Reservoir.Row(columns: \(columns), values: values)
        }
        \(access)init(row: borrowing Reservoir.Row) throws {
        \(assignments(from: "row"))
        }
        \(access)init(reader: borrowing Reservoir.RowReader) throws {
        \(assignments(from: "reader"))
        }
        \(access)static var readsColumns: Bool {
        true
        }
        """
    }
}

extension RowMapping {
    /// The mapping synthesized `Codable` gives `record`: the columns are the `CodingKeys`
    /// cases in their order (their raw values when given), or without a `CodingKeys` enum
    /// the stored properties in declaration order; a `let` with an initial value is encoded
    /// but not decoded.
    static func codable(_ members: RecordMembers) -> [MappedField] {
        let properties = members.stored
        let columns = members.codingKeys.map { keys in
            keys.compactMap { key in properties.first { $0.key == key.name }.map { ($0, key.column) } }
        } ?? properties.map { ($0, $0.key) }
        return columns.enumerated().map { position, pair in
            MappedField(name: pair.0.name, column: pair.1, position: position, decodes: !pair.0.encodeOnly)
        }
    }
}
