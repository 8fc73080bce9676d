/// What a backend knows of an entity: its name, id column, queryable fields and indexes.
public struct EntityDescription: Sendable, Hashable, CustomStringConvertible {
    private struct Fields: Sendable, Hashable {
        var name: String
        var idColumn: String
        var fields: [String]
        var indexes: [String]
        var integerIDs: Bool
    }

    /// The fields, shared by every copy: a description travels with every record a
    /// transaction writes (to the backend, the change tracker, the replay log), and copying
    /// one box costs one retain where the fields would cost one per string and array. Setters
    /// put in a new box, so a box never changes and one box means one description.
    private final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var storage: Storage

    private mutating func update(_ change: (inout Fields) -> Void) {
        var fields = storage.fields
        change(&fields)
        storage = Storage(fields)
    }

    /// The entity's name, which names its table or database.
    public var name: String {
        get { storage.fields.name }
        set { update { $0.name = newValue } }
    }

    /// The column holding the record's id.
    public var idColumn: String {
        get { storage.fields.idColumn }
        set { update { $0.idColumn = newValue } }
    }

    /// Queryable columns, the id first. Rows may hold further (opaque) columns.
    public var fields: [String] {
        get { storage.fields.fields }
        set { update { $0.fields = newValue } }
    }

    /// Columns with an ordered index.
    public var indexes: [String] {
        get { storage.fields.indexes }
        set { update { $0.indexes = newValue } }
    }

    /// Every id is an integer: backends may use an integer key. ``Schema`` sets it for
    /// `Int` and `Int64` ids; descriptions of rows without Swift types leave it false.
    public var integerIDs: Bool {
        get { storage.fields.integerIDs }
        set { update { $0.integerIDs = newValue } }
    }

    /// A description of entity `name`; `integerIDs` says every id is an integer, so a backend may key by integers.
    public init(name: String, idColumn: String = "id", fields: [String] = [], indexes: [String] = [], integerIDs: Bool = false) {
        storage = Storage(Fields(name: name, idColumn: idColumn, fields: fields.isEmpty ? [idColumn] : fields,
                                 indexes: indexes, integerIDs: integerIDs))
    }

    /// Whether both describe the same entity the same way.
    public static func == (lhs: EntityDescription, rhs: EntityDescription) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    /// The identity of the shared box this description's fields live in: copies of one
    /// description share it, so equal identities mean equal descriptions (not the converse).
    /// Only meaningful while a copy is kept alive: a freed box's address may be reused.
    package var identity: ObjectIdentifier { ObjectIdentifier(storage) }

    /// Hashes the description's fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.fields)
    }

    /// The entity's name.
    public var description: String { name }
}
