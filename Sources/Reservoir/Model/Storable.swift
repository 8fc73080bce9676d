/// A value type an app stores: `Codable`, `Identifiable` by a ``RecordID``
/// (`UUID`, `String` or `Int`), `Equatable` and `Sendable`, with a ``Schema``.
///
///     struct Todo: Storable {
///         var id: UUID
///         var title: String
///         var done: Bool
///         static let schema = Schema<Todo>("todos", fields: [.field(\.title), .field(\.done)])
///     }
///
/// Fields are stored by their `Codable` encoding; Backends.md lists how each Swift
/// type maps onto a stored ``Value``. Nested `Codable` values (structs, arrays,
/// dictionaries) are stored as one opaque JSON text value and are not queryable.
public protocol Storable: Codable, Identifiable, Equatable, Sendable where ID: RecordID {
    /// How this type is stored and which fields queries may name.
    static var schema: Schema<Self> { get }
}
