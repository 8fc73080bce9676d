/// Runs one version's steps in a write transaction, through the SPI every backend has: each
/// step reads the entity's rows, rewrites them, and puts them back under the entity's new
/// description (which makes backends add columns and build or drop indexes), so the whole
/// version commits or rolls back with the transaction. Afterwards it asks the backend to drop
/// what no row holds any more (``WriteTransaction/dropColumns(_:from:)``,
/// ``WriteTransaction/dropEntity(_:)``), which plain-SQL tables otherwise keep, and an index
/// dropped (``WriteTransaction/dropIndex(on:in:)``), which PostgreSQL otherwise keeps.
struct MigrationRunner {
    let writer: any WriteTransaction
    let version: SchemaVersion
    var progress: (@Sendable (MigrationProgress) -> Void)?

    /// Records between two progress reports within a step.
    static let progressInterval = 1000

    /// Runs every step; returns how many records each touched.
    func run() throws -> [Int] {
        try version.steps.indices.map { try run(step: $0) }
    }

    /// The stored description of `name`, or nil when the entity holds no records.
    func stored(_ name: String) throws -> EntityDescription? {
        try writer.entities().first { $0.name == name }
    }

    func failure(_ index: Int, _ message: String) -> ReservoirError {
        let step = version.steps[index]
        return ReservoirError(.migrationFailed, "migration to version \(version.number) failed at step \(index + 1) (\(step)): \(message); the store stays at the version before")
    }

    private func run(step index: Int) throws -> Int {
        let step = version.steps[index]
        guard let stored = try stored(step.entity) else { return 0 }
        var rows: [Row] = []
        try writer.fetch(Query(entity: stored)) { rows.append($0) }
        switch step.action {
        case let .splitEntity(fields, into):
            return try split(stored, rows: rows, fields: fields, into: into, step: index)
        case let .mergeEntity(into):
            return try merge(stored, rows: rows, into: into, step: index)
        default:
            break
        }
        let target = try describe(stored, after: step, index: index, rows: rows)
        let idColumn = stored.idColumn
        try each(rows, step: index, entity: stored.name) { row in
            let id = row.value(idColumn)
            var changed = row
            do {
                try apply(step.action, to: &changed, entity: stored)
            } catch {
                let reason = (error as? ReservoirError)?.message ?? "\(error)"
                throw failure(index, "entity \"\(stored.name)\", record \(id): \(reason)")
            }
            guard changed.value(idColumn).isIdentical(to: id) else {
                throw failure(index, "entity \"\(stored.name)\", record \(id): the step changed the record's id to \(changed.value(idColumn)); a migration cannot change ids")
            }
            if target.name != stored.name {
                try writer.put(target, id: id, row: changed)
                try writer.delete(stored, id: id)
            } else if target != stored || changed != row {
                try writer.put(target, id: id, row: changed)
            }
        }
        switch step.action {
        case let .renameField(field, _), let .dropField(field):
            try writer.dropColumns(Self.columns(of: field, in: stored), from: target)
        case .renameEntity:
            try writer.dropEntity(stored)
        case let .dropIndex(field):
            try writer.dropIndex(on: field, in: target)
        default:
            break
        }
        return rows.count
    }

    private func report(_ index: Int, entity: String, done: Int, of total: Int) {
        progress?(MigrationProgress(version: version.number, step: index + 1, stepCount: version.steps.count,
                                    entity: entity, recordsDone: done, recordsTotal: total))
    }

    /// Runs `body` on each row, reporting progress at the start, every ``progressInterval``
    /// rows and at the end.
    func each(_ rows: [Row], step index: Int, entity: String, _ body: (Row) throws -> Void) throws {
        report(index, entity: entity, done: 0, of: rows.count)
        for (position, row) in rows.enumerated() {
            if position > 0, position % Self.progressInterval == 0 {
                report(index, entity: entity, done: position, of: rows.count)
            }
            try body(row)
        }
        report(index, entity: entity, done: rows.count, of: rows.count)
    }

    /// Throws unless `field` is a field of `stored` (declared, or held by a row) other than its id.
    func requireField(_ field: String, of stored: EntityDescription, rows: [Row], step index: Int) throws {
        guard field != stored.idColumn else {
            throw failure(index, "\"\(field)\" is the id column of entity \"\(stored.name)\", which a migration cannot rename, drop, convert or move")
        }
        guard stored.fields.contains(field) || rows.contains(where: { $0.index(of: field) != nil }) else {
            let known = Set(stored.fields + rows.flatMap(\.columns)).sorted().joined(separator: ", ")
            throw failure(index, "entity \"\(stored.name)\" has no field \"\(field)\"; its fields are \(known)")
        }
    }

    /// The field's column and its folded shadow columns present in `entity` (a searchable
    /// field's shadows move and go with it).
    static func columns(of field: String, in entity: EntityDescription) -> [String] {
        [field] + TextMatchOptions.variants.map { TextFolding.shadowColumn(for: field, options: $0) }.filter(entity.fields.contains)
    }

    /// The entity's description once `step` ran, after checking that the step fits it.
    private func describe(_ stored: EntityDescription, after step: MigrationStep, index: Int, rows: [Row]) throws -> EntityDescription {
        var entity = stored
        func requireField(_ field: String) throws {
            try self.requireField(field, of: stored, rows: rows, step: index)
        }
        switch step.action {
        case let .addField(field, indexed, _):
            if !entity.fields.contains(field) { entity.fields.append(field) }
            if indexed, !entity.indexes.contains(field) { entity.indexes.append(field) }
        case let .renameField(field, newName):
            try requireField(field)
            guard !stored.fields.contains(newName), !rows.contains(where: { !$0.value(newName).isNull }) else {
                throw failure(index, "entity \"\(stored.name)\" already has a field \"\(newName)\"; drop it first or pick another name")
            }
            let renames = Dictionary(uniqueKeysWithValues: zip(Self.columns(of: field, in: stored), Self.columns(of: newName, in: stored.renaming(field, to: newName))))
            entity.fields = entity.fields.map { renames[$0] ?? $0 }
            entity.indexes = entity.indexes.map { renames[$0] ?? $0 }
        case let .dropField(field):
            try requireField(field)
            let dropped = Set(Self.columns(of: field, in: stored))
            entity.fields.removeAll(where: dropped.contains)
            entity.indexes.removeAll(where: dropped.contains)
        case let .changeType(field, _):
            try requireField(field)
        case let .addIndex(field):
            guard field == stored.idColumn || stored.fields.contains(field) || rows.contains(where: { $0.index(of: field) != nil }) else {
                throw failure(index, "entity \"\(stored.name)\" has no field \"\(field)\" to index; its fields are \(stored.fields.joined(separator: ", "))")
            }
            if !entity.indexes.contains(field) { entity.indexes.append(field) }
        case let .dropIndex(field):
            guard stored.indexes.contains(field) else {
                throw failure(index, "entity \"\(stored.name)\" has no index on \"\(field)\"; its indexes are \(stored.indexes.isEmpty ? "none" : stored.indexes.joined(separator: ", "))")
            }
            entity.indexes.removeAll { $0 == field }
        case .transform:
            break
        case let .renameEntity(newName):
            try requireUnused(newName, step: index, by: "rename \"\(stored.name)\" to")
            entity.name = newName
        case let .makeSearchable(field):
            try requireField(field)
            let shadows = TextMatchOptions.variants.map { TextFolding.shadowColumn(for: field, options: $0) }
            entity.fields += shadows.filter { !entity.fields.contains($0) }
            if stored.indexes.contains(field) { entity.indexes += shadows.filter { !entity.indexes.contains($0) } }
        case .splitEntity, .mergeEntity:
            break  // run by split and merge
        }
        return entity
    }

    /// Applies the step to one record's row.
    private func apply(_ action: MigrationStep.Action, to row: inout Row, entity: EntityDescription) throws {
        switch action {
        case let .addField(field, _, value):
            if row.value(field).isNull { row[field] = try value(row) }
        case let .renameField(field, newName):
            let renamed = entity.renaming(field, to: newName)
            for (old, new) in zip(Self.columns(of: field, in: entity), Self.columns(of: newName, in: renamed)) {
                let value = row[old]
                row[old] = nil
                if let value { row[new] = value }
            }
        case let .dropField(field):
            for column in Self.columns(of: field, in: entity) { row[column] = nil }
        case let .changeType(field, convert):
            row[field] = try convert(row.value(field))
        case .addIndex, .dropIndex, .renameEntity, .splitEntity, .mergeEntity:
            break
        case let .transform(body):
            try body(&row)
        case let .makeSearchable(field):
            let value = row.value(field)
            switch value {
            case .null, .text: break
            default: throw ReservoirError(.invalidSchema, "field \"\(field)\" holds \(value), which is not text; only a text field can be searchable")
            }
            for options in TextMatchOptions.variants {
                row[TextFolding.shadowColumn(for: field, options: options)] = TextFolding.shadowValue(value, options: options)
            }
        }
    }
}

extension EntityDescription {
    /// This description with `field` (and its shadow columns) named `newName`.
    func renaming(_ field: String, to newName: String) -> EntityDescription {
        var renamed = self
        let pairs = TextMatchOptions.variants.map { (TextFolding.shadowColumn(for: field, options: $0), TextFolding.shadowColumn(for: newName, options: $0)) }
        let map = Dictionary(uniqueKeysWithValues: [(field, newName)] + pairs)
        renamed.fields = fields.map { map[$0] ?? $0 }
        renamed.indexes = indexes.map { map[$0] ?? $0 }
        return renamed
    }
}
