// Fields that are stored but not queryable, properties that are not stored, and the error
// a query on either gets. `@Storable` (the `ReservoirMacros` product) writes schemas using
// all of these; hand-written schemas may too.

extension Schema.Field {
    /// A field of a nested `Codable` type (a struct, an array, a dictionary such as
    /// `[String: Int]`), stored as one opaque column: its single value when it encodes as
    /// one, else JSON text with sorted keys. Queries cannot filter or sort by it; the key
    /// path operators need a ``ValueConvertible`` type, so trying is a compile-time error.
    /// `column` defaults to the key path's last component.
    ///
    /// Disfavored, so that a type that is also ``ValueConvertible`` (`String`, `Int`, …)
    /// gets the queryable overload.
    @_disfavoredOverload
    public static func field<V: Codable & Sendable>(_ keyPath: KeyPath<Root, V>, column: String? = nil) -> Schema.Field {
        let name = column ?? Schema.defaultColumnName(for: keyPath)
        nonisolated(unsafe) let path = keyPath
        return Schema.Field(keyPath: keyPath, column: name, indexed: false, queryable: false,
                            extract: { try Value.encoding($0[keyPath: path], column: name) })
    }

    /// Refused: an opaque column has no order to index.
    @_disfavoredOverload
    @available(*, unavailable, message: "a nested Codable value is stored as one opaque column, which cannot be indexed; index a ValueConvertible field (declare ValueConvertible for a raw-value enum)")
    public static func field<V: Codable & Sendable>(_ keyPath: KeyPath<Root, V>, column: String? = nil, indexed: Bool) -> Schema.Field {
        field(keyPath, column: column)
    }
}

extension Schema {
    /// A property of the record that is not stored, named so that a query using it fails
    /// with an error that says which property it is and why: a key path to a computed
    /// property prints only as an address (`\Note.<computed 0x… (String)>`).
    public struct UnstoredProperty: @unchecked Sendable {
        // @unchecked: the only non-Sendable part is a key path, which is immutable.
        let keyPath: AnyKeyPath
        /// The property's name.
        public let name: String
        /// Why it is not stored, as the error message says it.
        public let reason: Reason

        /// Why a property is not stored.
        public enum Reason: String, Sendable {
            /// A computed property: there is nothing to store.
            case computed = "it is a computed property"
            /// A stored property marked `@Transient`.
            case transient = "it is marked @Transient"
            /// A stored property the type's `CodingKeys` leave out.
            case notInCodingKeys = "CodingKeys leave it out"
        }

        /// A computed property.
        public static func computed(_ keyPath: PartialKeyPath<Root>, _ name: String) -> UnstoredProperty {
            UnstoredProperty(keyPath: keyPath, name: name, reason: .computed)
        }

        /// A stored property marked `@Transient`: kept in memory, never written.
        public static func transient(_ keyPath: PartialKeyPath<Root>, _ name: String) -> UnstoredProperty {
            UnstoredProperty(keyPath: keyPath, name: name, reason: .transient)
        }

        /// A stored property the type's `CodingKeys` leave out.
        public static func notInCodingKeys(_ keyPath: PartialKeyPath<Root>, _ name: String) -> UnstoredProperty {
            UnstoredProperty(keyPath: keyPath, name: name, reason: .notInCodingKeys)
        }
    }

    /// This schema, naming `properties` as the record's properties that are not stored.
    public func naming(unstored properties: [UnstoredProperty]) -> Schema {
        var schema = self
        schema.unstored += properties
        return schema
    }

    /// The error for a query on `keyPath` when the schema has no queryable field for it,
    /// naming the property in words wherever the schema or the key path can.
    func notQueryable(_ keyPath: AnyKeyPath) -> ReservoirError {
        let queryable = fields.filter(\.queryable).map(\.column).joined(separator: ", ")
        let stores = "the schema \"\(name)\" can query \(queryable)"
        let path = String(describing: keyPath)
        if let field = fields.first(where: { $0.keyPath == keyPath }) {
            return ReservoirError(.invalidQuery, "\(path) is stored as one opaque column, \"\(field.column)\" (a nested value), so a predicate or sort cannot use it; \(stores)")
        }
        if let property = unstored.first(where: { $0.keyPath == keyPath }) {
            return ReservoirError(.invalidQuery, "\(Root.self).\(property.name) is not stored (\(property.reason.rawValue)), so a predicate or sort cannot use it; \(stores) (or fetch and filter in Swift)")
        }
        if path.contains("<computed") {
            return ReservoirError(.invalidQuery, "\(path) is not stored (it is a computed property of \(Root.self); a key path to one carries no name at run time, but @Storable names those declared in the type's body), so a predicate or sort cannot use it; \(stores) (or fetch and filter in Swift)")
        }
        return ReservoirError(.invalidQuery, "\(path) is not a queryable field of \(Root.self); \(stores) (add .field(\(path)) to it)")
    }
}
