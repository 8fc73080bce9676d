import Reservoir

/// Makes a struct a ``Reservoir/Storable`` record stored as entity `name`, its schema
/// derived from its stored properties:
///
///     import Reservoir
///     import ReservoirMacros
///
///     @Storable("messages")
///     struct Message {
///         var id: Int
///         @Indexed var channel: String
///         var text: String
///         @Column("sent_at") var sentAt: Date
///         var reactions: [String: Int] = [:]   // a nested value: one opaque column
///         @Transient var isSelected = false    // kept in memory, never stored
///         var preview: String { String(text.prefix(40)) }  // computed: not stored
///     }
///
/// The expansion conforms the struct to `Storable` and writes:
/// - `static let schema` (a `static var` for a generic struct): every stored property is a
///   field under its own name or its `@Column` name, `@Indexed` ones indexed. Fields of
///   ``Reservoir/ValueConvertible`` types are queryable; nested `Codable` values (structs,
///   arrays, dictionaries) are stored as one opaque column each, and a predicate or sort
///   on one does not compile. Computed and `@Transient` properties are named in the schema
///   too, so a query that uses one fails with an error naming the property.
/// - `makeRow()`, `init(row:)`, `init(reader:)` and `readsColumns`, as ``RowMapped()`` writes them.
/// - `CodingKeys`, when `@Column` or `@Transient` change what synthesized `Codable` would
///   encode and the struct declares none, so `Codable` and the store write the same rows.
///   A struct with its own `CodingKeys` keeps them: they choose, order and name the columns
///   as for `@RowMapped`, and `@Column`/`@Transient` must agree with them.
///
/// Refused at compile time, with a message at the attribute or member: a declaration that
/// is not a struct, a missing or invalid entity name, a hand-written `schema`, no stored
/// `id`, a `@Transient` property without a default value, `@Column` or `@Transient`
/// disagreeing with `CodingKeys`, two properties in one column, and what `@RowMapped`
/// refuses (its own `encode(to:)` or `init(from:)`, property wrappers, `lazy` properties).
@attached(member, names: named(CodingKeys))
@attached(extension, conformances: Storable,
          names: named(schema), named(makeRow), named(init(row:)), named(init(reader:)), named(readsColumns), named(rowMappedColumns))
public macro Storable(_ name: String) = #externalMacro(module: "ReservoirMacroPlugin", type: "StorableMacro")

/// Marks a stored property of a ``Storable(_:)`` struct for an ordered index, which makes
/// predicates and sorts on it cheaper on every backend. Its type must be
/// ``Reservoir/ValueConvertible``: an opaque nested value cannot be indexed.
@attached(peer)
public macro Indexed() = #externalMacro(module: "ReservoirMacroPlugin", type: "StorableAttributeMacro")

/// Marks a `String` or `String?` property of a ``Storable(_:)`` struct as searchable: the
/// core keeps folded shadow columns of it (``Reservoir/TextFolding``), so folded predicates
/// such as `.contains(\.text, "cafe", options: [.caseInsensitive, .diacriticInsensitive])`
/// can use it on every backend.
@attached(peer)
public macro Searchable() = #externalMacro(module: "ReservoirMacroPlugin", type: "StorableAttributeMacro")

/// Marks a stored property of a ``Storable(_:)`` struct as not stored: records keep it in
/// memory, and a record read from the store has its default value, which it must declare.
@attached(peer)
public macro Transient() = #externalMacro(module: "ReservoirMacroPlugin", type: "StorableAttributeMacro")

/// Stores a property of a ``Storable(_:)`` struct under the column `name` instead of its
/// own name; predicates and sorts still name it by key path.
@attached(peer)
public macro Column(_ name: String) = #externalMacro(module: "ReservoirMacroPlugin", type: "StorableAttributeMacro")
