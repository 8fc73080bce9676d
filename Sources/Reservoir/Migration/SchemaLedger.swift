/// The store's record of the schema versions applied to it: an ordinary entity,
/// `reservoir_schema_versions`, one record per version, written through the SPI's `put` like
/// any record, so every backend keeps it durably, in the migration's own transaction, and
/// copies and plain-SQL clients see it as a table. Each record keeps what an older app needs
/// to decide whether it may still use the store: whether the version was additive, and its
/// steps in words.
///
/// A change set that touches this entity is a schema change (``ChangeSet/isSchemaChange``):
/// that is how other processes, reading the change log, learn of a migration.
enum SchemaLedger {
    /// The entity's name.
    static let entityName = "reservoir_schema_versions"

    /// The entity's description.
    static let entity = EntityDescription(name: entityName, idColumn: "version", fields: ["version", "additive", "steps"], integerIDs: true)

    /// One applied version, as recorded.
    struct Entry: Sendable, Equatable {
        var version: Int
        var isAdditive: Bool
        var steps: String

        init(version: Int, isAdditive: Bool, steps: String) {
            self.version = version
            self.isAdditive = isAdditive
            self.steps = steps
        }

        init(_ version: SchemaVersion) {
            self.init(version: version.number, isAdditive: version.isAdditive,
                      steps: version.steps.map(\.description).joined(separator: "; "))
        }

        var row: Row {
            Row(columns: ["version", "additive", "steps"], values: [.integer(Int64(version)), .integer(isAdditive ? 1 : 0), .text(steps)])
        }
    }

    /// The applied versions, oldest first; empty when the store has never been migrated.
    static func entries(_ reader: any ReadTransaction) throws -> [Entry] {
        var entries: [Entry] = []
        try reader.fetch(Query(entity: entity)) { row in
            guard case let .integer(version) = row.value("version"), let number = Int(exactly: version) else {
                throw ReservoirError(.corrupt, "the schema version record \(row) has no integer version")
            }
            let steps: String
            if case let .text(text) = row.value("steps") { steps = text } else { steps = "" }
            entries.append(Entry(version: number, isAdditive: row.value("additive").integerValue != 0, steps: steps))
        }
        return entries.sorted { $0.version < $1.version }
    }

    /// Throws `.unknownSchemaVersion` when `entries` (the store's applied versions) hold a
    /// version `migrations` does not list that is not additive.
    static func checkKnown(_ entries: [Entry], by migrations: Migrations) throws {
        let unknown = entries.filter { $0.version > migrations.latest }
        guard let newest = unknown.last, let blocking = unknown.first(where: { !$0.isAdditive }) else { return }
        throw ReservoirError(.unknownSchemaVersion, "the store is at schema version \(newest.version), but this app knows versions up to \(migrations.latest); version \(blocking.version) is not additive (\(blocking.steps)), so this app cannot use the store safely: update the app")
    }

    /// The store's schema version: the newest applied, 0 when none was.
    static func version(_ reader: any ReadTransaction) throws -> Int {
        try entries(reader).last?.version ?? 0
    }
}

extension Value {
    /// The integer held, or 0.
    var integerValue: Int64 {
        if case let .integer(value) = self { return value }
        return 0
    }
}
