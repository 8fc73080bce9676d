/// An app's declared schema versions, in order, each a list of ``MigrationStep``s:
///
///     let migrations = Migrations {
///         SchemaVersion(1)
///         SchemaVersion(2,
///             .renameField("title", to: "name", in: "todos"),
///             .addField("done", to: "todos", default: false))
///     }
///     let store = try Store.open("sqlite:./app.sqlite", migrations: migrations)
///
/// Opening a store with migrations brings it to the newest version: each version it has not
/// applied runs in one write transaction of its own (all its steps, or none of them), is
/// recorded in the store, and is announced as one change set marked
/// ``ChangeSet/isSchemaChange``. A new, empty store is stamped with the newest version
/// without running anything. See ``Store/migrate(_:)``.
public struct Migrations: Sendable {
    /// The versions, oldest first.
    public let versions: [SchemaVersion]

    /// The versions `build` lists, oldest first.
    public init(@MigrationsBuilder _ build: () -> [SchemaVersion]) {
        self.versions = build()
    }

    /// The versions given, oldest first.
    public init(_ versions: [SchemaVersion]) {
        self.versions = versions
    }

    /// The newest version's number, 0 when there is none.
    public var latest: Int { versions.last?.number ?? 0 }

    /// Throws `.invalidSchema` when versions are not numbered upwards from 1 or a step
    /// names an entity or field that cannot be stored.
    public func validate() throws {
        var previous = 0
        for version in versions {
            guard version.number > previous else {
                throw ReservoirError(.invalidSchema, "migrations: version \(version.number) follows version \(previous); expected version numbers from 1, each above the one before")
            }
            previous = version.number
            for (index, step) in version.steps.enumerated() {
                for (what, name) in step.names where !isValidStoredName(name) || (what == "entity" && name == SchemaLedger.entityName) {
                    throw ReservoirError(.invalidSchema, "migrations: version \(version.number), step \(index + 1) (\(step)): \(what) name \"\(name)\" is not valid; expected letters, digits and _, not starting with a digit, and not \(SchemaLedger.entityName)")
                }
            }
        }
    }
}

/// One declared version of the schema: its number and the steps that lead to it from the
/// version before.
public struct SchemaVersion: Sendable, CustomStringConvertible {
    /// The version's number: 1 for the first, each above the one before.
    public let number: Int
    /// What the version changes, in order.
    public let steps: [MigrationStep]

    /// Version `number`, reached by `steps`, written one after another with commas:
    ///
    ///     SchemaVersion(2,
    ///         .renameField("title", to: "name", in: "todos"),
    ///         .addField("done", to: "todos", default: false))
    ///
    /// (Steps are listed with commas, not one per line in a closure: a line starting with `.`
    /// would continue the line before it.)
    public init(_ number: Int, _ steps: MigrationStep...) {
        self.number = number
        self.steps = steps
    }

    /// Version `number`, reached by `steps`.
    public init(_ number: Int, steps: [MigrationStep]) {
        self.number = number
        self.steps = steps
    }

    /// Whether every step only adds fields or indexes, so that an app that predates this
    /// version can keep using a store at it.
    public var isAdditive: Bool { steps.allSatisfy(\.isAdditive) }

    /// `version N: step; step`.
    public var description: String {
        "version \(number)" + (steps.isEmpty ? "" : ": " + steps.map(\.description).joined(separator: "; "))
    }
}

/// Builds the list of ``SchemaVersion``s in `Migrations { … }`.
@resultBuilder
public enum MigrationsBuilder {
    /// Lists of versions, concatenated.
    public static func buildBlock(_ lists: [SchemaVersion]...) -> [SchemaVersion] { lists.flatMap { $0 } }
    /// One version.
    public static func buildExpression(_ version: SchemaVersion) -> [SchemaVersion] { [version] }
    /// A version under `if`.
    public static func buildOptional(_ versions: [SchemaVersion]?) -> [SchemaVersion] { versions ?? [] }
    /// Versions from a loop.
    public static func buildArray(_ lists: [[SchemaVersion]]) -> [SchemaVersion] { lists.flatMap { $0 } }
}
