import Foundation

/// One committed change set as the store's history keeps it: its token, and each record it
/// inserted, updated or deleted (netted: a record inserted and deleted again in one change set
/// is not listed, so a plain-SQL transaction that changed nothing in the end has no changes). The rows are not kept; read the records you need (a ``Snapshot`` shows them
/// as of the same moment as the history it read, ``Snapshot/history(after:limit:)``).
public struct HistoryChangeSet: Sendable, Hashable, CustomStringConvertible {
    /// One record's change.
    public struct Change: Sendable, Hashable, CustomStringConvertible {
        /// The entity's name (the record type's ``Schema`` name).
        public let entity: String
        /// The record's id.
        public let id: Value
        /// Whether it was inserted, updated or deleted.
        public let kind: ChangeType

        /// A change of the record `id` of `entity`.
        public init(entity: String, id: Value, kind: ChangeType) {
            self.entity = entity
            self.id = id
            self.kind = kind
        }

        /// `entity id kind`, for logs.
        public var description: String { "\(entity) \(id) \(kind)" }
    }

    /// The change set's token: continue from it to read what came after.
    public let token: HistoryToken
    /// The records it changed, in the order the log holds them.
    public let changes: [Change]

    /// Whether the commit was a migration (``Store/migrate(_:)``): the store's schema changed
    /// and records of any entity may have been rewritten, so a consumer re-reads what it keeps.
    /// Its only change is the record of the applied version (entity `reservoir_schema_versions`).
    public var isSchemaChange: Bool {
        changes.contains { $0.entity == SchemaLedger.entityName }
    }

    /// A change set of the history.
    public init(token: HistoryToken, changes: [Change]) {
        self.token = token
        self.changes = changes
    }

    /// Who committed it: this library, or another client of the engine (plain SQL).
    public var origin: CommitPosition.Origin { token.position.origin }

    /// The token, the origin and the changes, on one line.
    public var description: String {
        "\(token) (\(origin)): " + changes.map(\.description).joined(separator: ", ")
    }
}
