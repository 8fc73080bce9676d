/// One change a ``SchemaVersion`` makes to the stored data of one entity.
///
/// Steps name entities and fields by their stored names (strings), since the app's Swift
/// types may no longer have the fields a step renames or drops:
///
///     .renameField("title", to: "name", in: "todos")
///     .addField("slug", to: "todos") { row in try row.decode("name", as: String.self).lowercased() }
///     .changeType(of: "priority", in: "todos", from: String.self, to: Int.self) { Int($0) ?? 0 }
///
/// A step over an entity that holds no records does nothing. Every step of a version runs in
/// that version's single write transaction; any failure rolls the whole version back.
public struct MigrationStep: Sendable, CustomStringConvertible {
    /// What a step does, for plans, messages and the store's record of applied versions.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A new field, set from a default or computed from each record.
        case addField
        /// A field stored under a new name.
        case renameField
        /// A field removed from every record.
        case dropField
        /// A field's every value replaced by a conversion of it.
        case changeType
        /// An ordered index on a field.
        case addIndex
        /// An index removed.
        case dropIndex
        /// Every record of an entity rewritten by a closure.
        case transform
        /// An entity stored under a new name.
        case renameEntity
        /// Chosen fields of every record moved to a new entity, keyed by the record's id.
        case splitEntity
        /// Every record of an entity moved into the records of another with the same ids.
        case mergeEntity
        /// A text field given the folded shadow columns that folded predicates compare against.
        case makeSearchable

        /// Whether a store with this step applied can still be used by an app that predates
        /// it: only added fields, indexes and folded shadow columns are (old code ignores a
        /// field it does not know).
        public var isAdditive: Bool { self == .addField || self == .addIndex || self == .makeSearchable }
    }

    enum Action: Sendable {
        case addField(String, indexed: Bool, value: @Sendable (Row) throws -> Value)
        case renameField(String, to: String)
        case dropField(String)
        case changeType(String, @Sendable (Value) throws -> Value)
        case addIndex(String)
        case dropIndex(String)
        case transform(@Sendable (inout Row) throws -> Void)
        case renameEntity(to: String)
        case splitEntity(fields: [String], into: String)
        case mergeEntity(into: String)
        case makeSearchable(String)
    }

    /// The entity the step works on (its name before a ``renameEntity(_:to:)``).
    public let entity: String
    /// What the step does.
    public let kind: Kind
    /// The step in words: `renameField "title" → "name" in todos`.
    public let description: String
    let action: Action

    private init(_ kind: Kind, _ entity: String, _ words: String, _ action: Action) {
        self.kind = kind
        self.entity = entity
        self.description = "\(kind.rawValue) \(words)"
        self.action = action
    }

    /// Whether the step only adds (a field or an index): see ``Kind/isAdditive``.
    public var isAdditive: Bool { kind.isAdditive }

    /// The names the step introduces or refers to, for validation: `(what, name)` pairs.
    var names: [(String, String)] {
        switch action {
        case let .addField(field, _, _), let .dropField(field), let .changeType(field, _), let .addIndex(field), let .dropIndex(field):
            [("entity", entity), ("field", field)]
        case let .renameField(field, to: newName):
            [("entity", entity), ("field", field), ("field", newName)]
        case .transform:
            [("entity", entity)]
        case let .renameEntity(to: newName), let .mergeEntity(into: newName):
            [("entity", entity), ("entity", newName)]
        case let .splitEntity(fields, into):
            [("entity", entity), ("entity", into)] + fields.map { ("field", $0) }
        case let .makeSearchable(field):
            [("entity", entity), ("field", field)]
        }
    }

    // MARK: - Steps

    /// Adds `field` to every record of `entity`, set to `value`; a record that already holds
    /// a non-null value there keeps it. With `indexed`, the field also gets an ordered index.
    public static func addField<V: ValueConvertible>(_ field: String, to entity: String, default value: V, indexed: Bool = false) -> MigrationStep {
        MigrationStep(.addField, entity, "\"\(field)\" to \(entity)", .addField(field, indexed: indexed) { _ in try value.toValue() })
    }

    /// Adds `field` to every record of `entity`, computed from the record's stored row (its
    /// other fields as they are at this step); a record that already holds a non-null value
    /// there keeps it. Throwing rolls the whole version back, naming the record.
    public static func addField<V: ValueConvertible>(
        _ field: String, to entity: String, indexed: Bool = false, computing value: @escaping @Sendable (Row) throws -> V
    ) -> MigrationStep {
        MigrationStep(.addField, entity, "\"\(field)\" to \(entity) (computed)", .addField(field, indexed: indexed) { try value($0).toValue() })
    }

    /// Stores `field` of every record of `entity` under `newName` instead, keeping an index on it.
    public static func renameField(_ field: String, to newName: String, in entity: String) -> MigrationStep {
        MigrationStep(.renameField, entity, "\"\(field)\" → \"\(newName)\" in \(entity)", .renameField(field, to: newName))
    }

    /// Removes `field` (and its index) from every record of `entity`.
    public static func dropField(_ field: String, from entity: String) -> MigrationStep {
        MigrationStep(.dropField, entity, "\"\(field)\" from \(entity)", .dropField(field))
    }

    /// Replaces every value of `field` in `entity` by `transform` of it: each stored value is
    /// read as `Old` (a value that does not convert fails the version, naming the record) and
    /// the result stored as `New`. A record without the field is read as null, so `Old` may be
    /// optional to accept it.
    public static func changeType<Old: ValueConvertible, New: ValueConvertible>(
        of field: String, in entity: String, from old: Old.Type, to new: New.Type,
        _ transform: @escaping @Sendable (Old) throws -> New
    ) -> MigrationStep {
        MigrationStep(.changeType, entity, "\"\(field)\" in \(entity) from \(Old.self) to \(New.self)", .changeType(field) { value in
            let converted: Old
            do {
                converted = try Old.fromValue(value)
            } catch let error as ReservoirError {
                throw error.inColumn(field)
            }
            return try transform(converted).toValue()
        })
    }

    /// Adds an ordered index on `field` of `entity`. The app's ``Schema`` decides the indexes
    /// its writes keep: declare the field `indexed` there too, or its next write drops it.
    public static func addIndex(on field: String, in entity: String) -> MigrationStep {
        MigrationStep(.addIndex, entity, "on \"\(field)\" in \(entity)", .addIndex(field))
    }

    /// Removes the index on `field` of `entity`; the field's values stay.
    public static func dropIndex(on field: String, in entity: String) -> MigrationStep {
        MigrationStep(.dropIndex, entity, "on \"\(field)\" in \(entity)", .dropIndex(field))
    }

    /// Rewrites every record of `entity` with `body`, which may set, change or remove any
    /// field but the id. Throwing rolls the whole version back, naming the record.
    public static func transform(_ entity: String, _ body: @escaping @Sendable (inout Row) throws -> Void) -> MigrationStep {
        MigrationStep(.transform, entity, entity, .transform(body))
    }

    /// Stores every record of `entity` under the entity name `newName`, which must hold no records.
    public static func renameEntity(_ entity: String, to newName: String) -> MigrationStep {
        MigrationStep(.renameEntity, entity, "\(entity) → \(newName)", .renameEntity(to: newName))
    }

    /// Moves `fields` (with their indexes and folded shadow columns) out of every record of
    /// `entity` into a record of entity `newEntity`, which must hold no records: one record
    /// there per record of `entity`, under the same id (in a column of the same name), holding
    /// the moved values. ``mergeEntity(_:into:)`` is the inverse.
    ///
    ///     .splitEntity("todos", fields: ["notes", "attachment"], into: "todo_details")
    public static func splitEntity(_ entity: String, fields: [String], into newEntity: String) -> MigrationStep {
        let names = fields.map { "\"\($0)\"" }.joined(separator: ", ")
        return MigrationStep(.splitEntity, entity, "\(names) of \(entity) → \(newEntity)", .splitEntity(fields: fields, into: newEntity))
    }

    /// Moves every record of `entity` into the record of `target` with the same id: its fields
    /// (all but its id column, with their indexes) are added to that record, and `entity` is
    /// removed. A record of `entity` with no record of that id in `target`, or a field both
    /// entities have, fails the version.
    ///
    ///     .mergeEntity("todo_details", into: "todos")
    public static func mergeEntity(_ entity: String, into target: String) -> MigrationStep {
        MigrationStep(.mergeEntity, entity, "\(entity) → \(target)", .mergeEntity(into: target))
    }

    /// Makes the text field `field` of `entity` searchable: every record gets the folded shadow
    /// columns (indexed when the field is) that folded predicates compare against, as an app
    /// schema's `.field(…, searchable: true)` or `@Searchable` expects. A value that is not
    /// text (or null) fails the version.
    public static func makeSearchable(_ field: String, in entity: String) -> MigrationStep {
        MigrationStep(.makeSearchable, entity, "\"\(field)\" in \(entity)", .makeSearchable(field))
    }
}
