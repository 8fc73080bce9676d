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

        /// Whether a store with this step applied can still be used by an app that predates
        /// it: only added fields and indexes are (old code ignores a field it does not know).
        public var isAdditive: Bool { self == .addField || self == .addIndex }
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
        case let .renameEntity(to: newName):
            [("entity", entity), ("entity", newName)]
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
}
