// Searchable fields: the folded shadow columns the core keeps beside them, which folded
// predicates compare against byte-wise (Backends.md, "Folded text matching").

extension Schema {
    /// Whether the core writes folded shadow columns for this schema's records.
    var hasSearchableFields: Bool { !searchableColumns.isEmpty }

    /// The shadow column that a predicate on `keyPath` folded with `options` compares
    /// against; throws `.invalidQuery` naming the field when it is not searchable.
    func foldedColumn(for keyPath: AnyKeyPath, options: TextMatchOptions) throws -> String {
        let column = try column(for: keyPath)
        guard searchableColumns.contains(column) else {
            let searchable = searchableColumns.isEmpty ? "none" : searchableColumns.joined(separator: ", ")
            throw ReservoirError(.invalidQuery, "\(keyPath) (column \"\(column)\" of \"\(name)\") is not searchable, so a predicate with options \(options) cannot use it; declare it searchable (@Searchable, or .field(\(keyPath), searchable: true)); searchable fields of \"\(name)\": \(searchable)")
        }
        return TextFolding.shadowColumn(for: column, options: options)
    }

    /// `row` with every searchable field's shadow columns set from its current value.
    func addingShadows(to row: Row) -> Row {
        var row = row
        for column in searchableColumns {
            let value = row.value(column)
            for options in TextMatchOptions.variants {
                row[TextFolding.shadowColumn(for: column, options: options)] = TextFolding.shadowValue(value, options: options)
            }
        }
        return row
    }

    /// Whether `row`'s shadow columns all hold what ``addingShadows(to:)`` would write.
    func hasCurrentShadows(_ row: Row) -> Bool {
        searchableColumns.allSatisfy { column in
            let value = row.value(column)
            return TextMatchOptions.variants.allSatisfy { options in
                guard let shadow = row[TextFolding.shadowColumn(for: column, options: options)] else { return false }
                return shadow.isIdentical(to: TextFolding.shadowValue(value, options: options))
            }
        }
    }

    /// Problems with shadow column names: one that a field's own column already takes. The
    /// comparison ignores ASCII letter case, as SQLite's column names do.
    static func shadowColumnProblems(_ fields: [Field]) -> [String] {
        let taken = Dictionary(fields.map { ($0.column.lowercased(), $0.column) }, uniquingKeysWith: { first, _ in first })
        var problems: [String] = []
        for field in fields where field.searchable {
            for options in TextMatchOptions.variants {
                let shadow = TextFolding.shadowColumn(for: field.column, options: options)
                if let owner = taken[shadow.lowercased()] {
                    problems.append("column \"\(owner)\" collides with \"\(shadow)\", the shadow column that searchable field \"\(field.column)\" needs for options \(options); rename one of them (pass column:)")
                }
            }
        }
        return problems
    }
}
