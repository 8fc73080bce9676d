import Foundation
import Reservoir

/// The reference the backends are held to: the stored rows in a dictionary, queries by
/// ``QueryEvaluator`` (the contract's definition), and change sets netted from the rows
/// before and after each write, with one sequence number per write that changed something.
struct DifferentialModel {
    private(set) var rows: [Int: Row] = [:]
    private(set) var sequence: UInt64 = 0

    /// What one write did: a line per operation, and the change set it published.
    struct WriteOutcome {
        var lines: [String] = []
        var changeSet: String?
    }

    /// Runs a write's operations against a working copy, which becomes the state unless
    /// the write fails.
    mutating func write(_ operations: [DifferentialOperation], failing: Bool) -> WriteOutcome {
        var working = rows
        var outcome = WriteOutcome()
        for operation in operations {
            outcome.lines.append(Self.apply(operation, to: &working))
        }
        guard !failing else { return outcome }
        outcome.changeSet = commit(working)
        return outcome
    }

    /// Rows put and ids deleted by a client outside the library. Puts identical to what is
    /// stored are dropped by the caller first (see ``foreignChanges(put:delete:)``).
    mutating func foreign(put: [DifferentialNote], delete: [Int]) -> String? {
        var working = rows
        for note in put { working[note.id] = Self.row(note) }
        for id in delete { working[id] = nil }
        return commit(working)
    }

    /// The foreign write that really changes something: puts identical to the stored row
    /// (which a plain SQL client may well issue, and which then change nothing) are left out.
    func foreignChanges(put: [DifferentialNote], delete: [Int]) -> (put: [DifferentialNote], delete: [Int]) {
        var working = rows
        var kept: [DifferentialNote] = []
        for note in put {
            let row = Self.row(note)
            if working[note.id] != row { kept.append(note) }
            working[note.id] = row
        }
        return (kept, delete)
    }

    /// A schema version: every row rewritten as `migration` says, announced as one schema
    /// change (an incomplete change set); or nothing at all when it fails on a row.
    mutating func migrate(_ migration: DifferentialMigration) -> WriteOutcome {
        var working = rows
        do {
            for (id, row) in rows { working[id] = try migration.apply(to: row) }
        } catch {
            return WriteOutcome(lines: ["error migrationFailed"])
        }
        rows = working
        sequence += 1
        return WriteOutcome(lines: ["migrated"], changeSet: "#\(sequence) incomplete")
    }

    private mutating func commit(_ working: [Int: Row]) -> String? {
        var changes = EntityChanges(entity: DifferentialNote.schema.name)
        for (id, row) in working.sorted(by: { $0.key < $1.key }) {
            if let before = rows[id] {
                if before != row { changes.updated.append(RowChange(id: .integer(Int64(id)), row: row)) }
            } else {
                changes.inserted.append(RowChange(id: .integer(Int64(id)), row: row))
            }
        }
        for id in rows.keys.sorted() where working[id] == nil {
            changes.deleted.append(.integer(Int64(id)))
        }
        rows = working
        guard !changes.isEmpty else { return nil }
        sequence += 1
        return DifferentialRender.changeSet(ChangeSet(sequence: sequence, entities: [changes]))
    }

    private static func apply(_ operation: DifferentialOperation, to rows: inout [Int: Row]) -> String {
        switch operation {
        case let .insert(note):
            guard rows[note.id] == nil else { return "error duplicateID" }
            rows[note.id] = row(note)
            return "inserted"
        case let .update(note):
            guard rows[note.id] != nil else { return "error notFound" }
            rows[note.id] = row(note)
            return "updated"
        case let .upsert(note):
            let row = row(note)
            let result = rows[note.id] == nil ? "inserted" : rows[note.id] == row ? "unchanged" : "updated"
            rows[note.id] = row
            return result
        case let .delete(id):
            return "deleted \(rows.removeValue(forKey: id) != nil)"
        case let .deleteMatching(request):
            let matched = fetchRows(request, in: rows)
            for row in matched { rows[id(of: row)] = nil }
            return "deleted \(matched.count)"
        case let .rewrite(id):
            return rows[id] == nil ? "no record" : "rewritten"
        case let .revert(id):
            return rows[id] == nil ? "no record" : "reverted"
        case let .get(id):
            return "get \(rows[id].map(DifferentialRender.note) ?? "nil")"
        case let .fetch(request):
            return "fetch " + DifferentialRender.notes(fetchRows(request, in: rows))
        case let .count(request):
            return "count \(fetchRows(request, in: rows).count)"
        }
    }

    // MARK: - Reading

    func fetch(_ request: Int) -> [DifferentialNote] {
        Self.fetchRows(request, in: rows).compactMap { try? DifferentialNote(row: $0) }
    }

    func get(_ id: Int) -> DifferentialNote? {
        rows[id].flatMap { try? DifferentialNote(row: $0) }
    }

    static func fetchRows(_ request: Int, in rows: [Int: Row]) -> [Row] {
        guard let query = try? DifferentialNote.requests[request].query() else { return [] }
        return QueryEvaluator.evaluate(query, over: rows.values)
    }

    /// The row the store keeps for `note`: what it encodes to (NaN becomes null).
    static func row(_ note: DifferentialNote) -> Row {
        (try? note.makeRow()) ?? Row()
    }

    private static func id(of row: Row) -> Int {
        if case let .integer(id) = row.value("id") { return Int(id) }
        return -1
    }
}

/// One text form for what replicas and the model produce, so they compare as strings and
/// a mismatch prints readably.
enum DifferentialRender {
    static func note(_ row: Row) -> String {
        (try? DifferentialNote(row: row)).map(\.description) ?? "undecodable \(row)"
    }

    static func notes(_ rows: [Row]) -> String {
        "[" + rows.map(note).joined(separator: ", ") + "]"
    }

    static func list(_ notes: [DifferentialNote]) -> String {
        "[" + notes.map(\.description).joined(separator: ", ") + "]"
    }

    /// A change set with its records sorted by id: the order within one change set is not
    /// part of the contract. Whether it is external is left out, since a backend without
    /// a second store runs "elsewhere" writes on the main one.
    static func changeSet(_ changeSet: ChangeSet) -> String {
        guard changeSet.isComplete else { return "#\(changeSet.sequence) incomplete" }
        var parts = ["#\(changeSet.sequence)"]
        for changes in changeSet.entities {
            let inserted = changes.inserted.sorted { $0.id < $1.id }.map { note($0.row) }
            let updated = changes.updated.sorted { $0.id < $1.id }.map { note($0.row) }
            let deleted = changes.deleted.sorted().map(\.description)
            parts.append("\(changes.entity) +[\(inserted.joined(separator: ", "))] ~[\(updated.joined(separator: ", "))] -[\(deleted.joined(separator: ", "))]")
        }
        return parts.joined(separator: " ")
    }
}
