/// Declares how a record type is stored: its entity name, the fields queries may
/// name by key path, and which of them are indexed. `@Storable` (the `ReservoirMacros`
/// product) writes it from the type's stored properties; by hand it reads:
///
///     struct Todo: Storable {
///         var id: UUID
///         var title: String
///         var priority: Int
///         var due: Date?
///         static let schema = Schema<Todo>("todos", fields: [
///             .field(\.title), .field(\.priority, indexed: true), .field(\.due),
///         ])
///     }
///
/// A field of a nested `Codable` type (`[String: Int]`, a struct) may be listed too: it is
/// stored as one opaque column, which queries cannot use. A field's column is the name its
/// `CodingKey` encodes under. By default it is
/// the key path's last component (`\.priority` → `"priority"`); pass `column:`
/// when `CodingKeys` renames it. The id is always stored, indexed, used as the final
/// sort key and queryable as `\.id` (listing `.field(\.id)` is allowed, not needed). Mistakes
/// (an unknown column, a repeated one) are reported as ``ReservoirError`` with code
/// `.invalidSchema` the first time the store uses the type, not as a crash.
public struct Schema<Root: Storable>: @unchecked Sendable {
    // @unchecked: the only non-Sendable stored parts are key paths, which are immutable.

    /// One stored field: queryable when its type is ``ValueConvertible``, otherwise (a
    /// nested `Codable` value) stored as one opaque column that queries cannot name.
    public struct Field: @unchecked Sendable {
        let keyPath: AnyKeyPath
        /// The column name the field is stored under.
        public let column: String
        /// Whether backends keep an ordered index on it.
        public let indexed: Bool
        /// Whether predicates and sorts may use it: false for an opaque nested value.
        public let queryable: Bool
        let extract: @Sendable (Root) throws -> Value
        /// Whether the core keeps folded shadow columns of it for folded text predicates
        /// (``TextMatchOptions``); only `String` and `String?` fields may be searchable.
        public internal(set) var searchable = false
        /// Set for a searchable field of a type other than `String` or `String?`.
        var searchableTypeProblem: String?

        /// A queryable field. `column` defaults to the key path's last component. A
        /// `searchable` text field also gets folded shadow columns for folded predicates
        /// (see ``TextFolding``), written by the core on every write of the record.
        public static func field<V: ValueConvertible>(
            _ keyPath: KeyPath<Root, V>, column: String? = nil, indexed: Bool = false, searchable: Bool = false
        ) -> Field {
            let name = column ?? Schema.defaultColumnName(for: keyPath)
            nonisolated(unsafe) let path = keyPath
            var field = Field(keyPath: keyPath, column: name, indexed: indexed, queryable: true, extract: { try $0[keyPath: path].toValue() })
            field.searchable = searchable
            if searchable, V.self != String.self, V.self != String?.self {
                field.searchableTypeProblem = "field \"\(name)\" is searchable but holds \(V.self); only String and String? fields can be searchable"
            }
            return field
        }
    }

    /// The entity (table, named database) name.
    public let name: String
    /// The column the record id is stored under.
    public let idColumn: String
    /// The fields, the id first: queryable ones and opaque nested values.
    public let fields: [Field]
    /// Problems found while building the schema, reported on first use.
    let problems: [String]
    /// The columns of searchable fields, whose folded forms the core writes to shadow columns.
    let searchableColumns: [String]
    /// The record's properties that are not stored, so that errors can name them.
    var unstored: [UnstoredProperty] = []
    /// ``entity``, built once: every insert, update and delete asks for it.
    private let entityDescription: EntityDescription
    /// The positions in `fields` that key paths were found at (``field(for:)``).
    private let found = FieldPositions()

    /// A schema for `Root` stored as entity `name`.
    /// - Parameters:
    ///   - name: the entity name: letters, digits and `_`, not starting with a digit.
    ///   - idColumn: the column the id encodes under, `"id"` unless `CodingKeys` renames it.
    ///   - fields: the fields queries and sorts may use.
    public init(_ name: String, idColumn: String = "id", fields: [Field] = []) {
        self.name = name
        self.idColumn = idColumn
        let idPath = \Root.id
        let idField = Field(keyPath: idPath, column: idColumn, indexed: false, queryable: true, extract: { try $0[keyPath: idPath].toValue() })
        // A listed `.field(\.id)` carries the concrete key path queries use; it stands in for the generic one.
        let listedID = fields.first { $0.column == idColumn }
        self.fields = [listedID ?? idField] + fields.filter { $0.column != idColumn }
        var problems: [String] = []
        if !Schema.isValidName(name) {
            problems.append("entity name \"\(name)\" is not valid; expected letters, digits and _, not starting with a digit")
        }
        var seen: Set<String> = []
        for field in self.fields {
            if !Schema.isValidName(field.column) {
                problems.append("column name \"\(field.column)\" is not valid; expected letters, digits and _, not starting with a digit (pass column: to name it)")
            }
            if !seen.insert(field.column).inserted {
                problems.append("column \"\(field.column)\" is named by more than one field")
            }
            if let problem = field.searchableTypeProblem { problems.append(problem) }
        }
        problems += Schema.shadowColumnProblems(self.fields)
        self.problems = problems
        let searchable = self.fields.filter(\.searchable)
        let shadows = searchable.flatMap { field in TextMatchOptions.variants.map { TextFolding.shadowColumn(for: field.column, options: $0) } }
        let indexedShadows = searchable.filter(\.indexed).flatMap { field in
            TextMatchOptions.variants.map { TextFolding.shadowColumn(for: field.column, options: $0) }
        }
        self.searchableColumns = searchable.map(\.column)
        self.entityDescription = EntityDescription(
            name: name, idColumn: idColumn,
            fields: self.fields.filter(\.queryable).map(\.column) + shadows,
            indexes: self.fields.filter { $0.indexed }.map { $0.column } + indexedShadows,
            integerIDs: Root.ID.self == Int.self || Root.ID.self == Int64.self
        )
    }

    /// The field for a key path, or nil when the schema does not name it.
    public func field(for keyPath: AnyKeyPath) -> Field? {
        if let position = found.position(of: keyPath) { return position >= 0 ? fields[position] : nil }
        let position = search(keyPath)
        let field = position.map { fields[$0] }
        found.remember(keyPath, at: position ?? -1, column: field.flatMap { $0.queryable ? $0.column : nil })
        return field
    }

    /// Where `keyPath`'s field is in `fields`: comparing key paths walks their components, a
    /// few hundred instructions each, which ``field(for:)`` then spares the next query.
    private func search(_ keyPath: AnyKeyPath) -> Int? {
        if let listed = fields.firstIndex(where: { $0.keyPath == keyPath }) { return listed }
        // `\Todo.id` written at a call site is not equal to the generic `\Root.id` the schema
        // holds when `.field(\.id)` is not listed (that one goes through `Identifiable`'s
        // requirement). A top-level member named `id` of type `ID` is that requirement's
        // witness all the same, since no other member can have that name.
        if keyPath is KeyPath<Root, Root.ID>, Schema.defaultColumnName(for: keyPath) == "id" { return 0 }
        return nil
    }

    /// The column for a key path; throws `.invalidQuery` naming the property when the schema
    /// does not name it or stores it as an opaque value.
    public func column(for keyPath: AnyKeyPath) throws -> String {
        // Every query resolves its key paths here: a remembered column spares copying the field
        // out of `fields`, which in this generic code costs more than finding it.
        if let column = found.column(of: keyPath) { return column }
        guard let field = field(for: keyPath), field.queryable else { throw notQueryable(keyPath) }
        return field.column
    }

    /// The backend-neutral description of this entity.
    public var entity: EntityDescription { entityDescription }

    static func defaultColumnName(for keyPath: AnyKeyPath) -> String {
        // "\Todo.priority" → "priority". Nested paths ("\Todo.a.b") give a name with a dot,
        // which validation rejects with a message.
        let text = String(describing: keyPath)
        guard let dot = text.firstIndex(of: ".") else { return text }
        return String(text[text.index(after: dot)...])
    }

    static func isValidName(_ name: String) -> Bool {
        isValidStoredName(name)
    }
}

/// Whether `name` can name an entity or a column: letters, digits and `_`, not starting with a digit.
func isValidStoredName(_ name: String) -> Bool {
    guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
    return name.utf8.allSatisfy { byte in
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }
}

extension Schema {
    /// Throws `.invalidSchema` listing every problem found when the schema was built.
    public func validate() throws {
        guard problems.isEmpty else {
            throw ReservoirError(.invalidSchema, "schema of \(Root.self) (\"\(name)\"): " + problems.joined(separator: "; "))
        }
    }
}

/// Key paths a schema has looked up, by the identity of the key path object: a key path
/// written in code is one object for the life of the process (each literal is made once), so
/// the next query naming it finds its field without comparing key paths. Each entry holds its
/// key path, so no other key path can come to have that identity; at most `limit` are kept.
/// With the position goes the field's column when queries may name it.
final class FieldPositions: Sendable {
    private let known = Locked<[ObjectIdentifier: (keyPath: AnyKeyPath, position: Int, column: String?)]>([:])
    static let limit = 256

    /// The position remembered for `keyPath` (-1: no field), or nil when there is none.
    func position(of keyPath: AnyKeyPath) -> Int? {
        known.withLock { $0[ObjectIdentifier(keyPath)]?.position }
    }

    /// The column remembered for `keyPath`, or nil when none is (no field, or not queryable).
    func column(of keyPath: AnyKeyPath) -> String? {
        known.withLock { $0[ObjectIdentifier(keyPath)]?.column }
    }

    func remember(_ keyPath: AnyKeyPath, at position: Int, column: String?) {
        known.withLock { known in
            if known.count < Self.limit { known[ObjectIdentifier(keyPath)] = (keyPath, position, column) }
        }
    }
}
