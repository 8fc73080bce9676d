/// A value type an app stores: `Codable`, `Identifiable` by a ``RecordID``
/// (`UUID`, `String` or `Int`), `Equatable` and `Sendable`, with a ``Schema``.
///
/// The `@Storable("todos")` macro (the `ReservoirMacros` product) declares the conformance
/// and derives the schema and row mapping from the stored properties. By hand:
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
///
/// ## Mapping rows without `Codable`
/// `Codable` costs about 0.2 µs a record each way (a five-field record), where the generated
/// mapping costs 0.03 µs: more than the rest of the store's work on a fast backend. Where that
/// matters (bulk imports, large fetches), add `@RowMapped` (the `ReservoirMacros` product),
/// which writes ``makeRow()`` and ``init(row:)`` from the stored properties and gives the same
/// rows `Codable` gives; or implement them by hand. The store uses them instead of `Codable` and checks them
/// against the schema like the default:
///
///     extension Todo {
///         static let columns = ["id", "title", "done"]
///         func makeRow() throws -> Row {
///             Row(columns: Self.columns, values: [try id.toValue(), .text(title), try done.toValue()])
///         }
///         init(row: borrowing Row) throws {
///             self.init(id: try row.decode("id"), title: try row.decode("title"), done: try row.decode("done"))
///         }
///     }
///
/// `borrowing` lets a fetch lend each row to the initializer instead of retaining and
/// releasing its storage for it; a plain `init(row: Row)` satisfies the requirement too.
/// The two must agree with each other and with the `Codable` encoding (the same columns,
/// the same ``ValueConvertible`` mapping), so rows written either way read back either way.
/// The macros also write ``init(reader:)``, the same fields read from a ``RowReader``, and
/// ``readsColumns`` true, so a backend that reads a result's columns in place (SQLite) hands
/// each field over without a ``Row``; a hand-written mapping may do the same.
public protocol Storable: Codable, Identifiable, Equatable, Sendable where ID: RecordID {
    /// How this type is stored and which fields queries may name.
    static var schema: Schema<Self> { get }

    /// The row this record is stored as. The default encodes it with ``RowEncoder``.
    func makeRow() throws -> Row

    /// The record a stored row holds. The default decodes it with ``RowDecoder``.
    init(row: borrowing Row) throws

    /// The record the row a fetch is reading holds, read column by column: it must return
    /// what ``init(row:)`` returns for the same row. `@RowMapped` and `@Storable` write it with
    /// ``RowReader/decode(_:as:at:)``, which from a backend that reads columns in place
    /// (SQLite) takes each field without making a ``Value`` for it. The default calls
    /// ``init(row:)`` with the reader's row.
    init(reader: borrowing RowReader) throws

    /// Whether fetches should decode this type through ``init(reader:)``: true where that
    /// reads the columns itself (`@RowMapped` and `@Storable` say so). False, the default,
    /// keeps fetches on ``init(row:)``, which spares a backend that reads columns in place
    /// making a row from them for the default `init(reader:)`.
    static var readsColumns: Bool { get }
}

extension Storable {
    /// Encodes the record with ``RowEncoder``.
    public func makeRow() throws -> Row {
        try RowEncoder().encode(self)
    }

    /// Decodes the record with ``RowDecoder``.
    public init(row: borrowing Row) throws {
        self = try RowDecoder().decode(Self.self, from: row)
    }

    /// Calls ``init(row:)`` with the reader's row.
    public init(reader: borrowing RowReader) throws {
        try self.init(row: reader.row())
    }

    /// False: fetches decode through ``init(row:)``.
    public static var readsColumns: Bool { false }
}
