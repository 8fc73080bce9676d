/// Runs one version's steps in a write transaction, through the SPI every backend has: each
/// step reads the entity's rows a page at a time in id order (``pageSize``), rewrites them, and
/// puts back those it changed under the entity's new description (the first put carries it,
/// which makes backends add columns and build or drop indexes), so the whole version commits or
/// rolls back with the transaction and the step holds one page of rows, not the entity. A field
/// rename asks the backend to rename in place first (``WriteTransaction/renameColumns(_:in:to:)``)
/// and rewrites the rows only when it cannot. Afterwards it asks the backend to drop what no row
/// holds any more (``WriteTransaction/dropColumns(_:from:)``, ``WriteTransaction/dropEntity(_:)``),
/// which plain-SQL tables otherwise keep, and an index dropped
/// (``WriteTransaction/dropIndex(on:in:)``), which PostgreSQL otherwise keeps.
struct MigrationRunner {
    let writer: any WriteTransaction
    let version: SchemaVersion
    var progress: (@Sendable (MigrationProgress) -> Void)?

    /// The renamed column list of the rows a rename rewrites, made once per row shape.
    let renamedColumns = RenamedColumns()

    /// Records between two progress reports within a step.
    static let progressInterval = 1000

    /// Records a step reads at a time from a persistent backend: `id > last` in id order,
    /// limited, so a step's memory does not grow with its entity.
    static let pageSize = 1000
    /// Records a step reads at a time; nil reads the entity in one page, which suits a backend
    /// that holds its rows in memory anyway (its rows share their storage with the fetched ones,
    /// and a page it cannot narrow by id would cost a scan of the entity).
    var pageSize: Int? = Self.pageSize

    /// Runs every step; returns how many records each touched.
    func run() throws -> [Int] {
        try version.steps.indices.map { try run(step: $0) }
    }

    /// The stored description of `name`, or nil when the entity holds no records.
    func stored(_ name: String) throws -> EntityDescription? {
        try writer.entities().first { $0.name == name }
    }

    /// The step's failure for `error`, thrown while it changed record `id` of `entity`.
    func recordFailure(_ index: Int, _ error: any Error, entity: EntityDescription, id: Value) -> ReservoirError {
        let reason = (error as? ReservoirError)?.message ?? "\(error)"
        return failure(index, "entity \"\(entity.name)\", record \(id): \(reason)")
    }

    func failure(_ index: Int, _ message: String) -> ReservoirError {
        let step = version.steps[index]
        return ReservoirError(.migrationFailed, "migration to version \(version.number) failed at step \(index + 1) (\(step)): \(message); the store stays at the version before")
    }

    private func run(step index: Int) throws -> Int {
        let step = version.steps[index]
        guard let stored = try stored(step.entity) else { return 0 }
        let total = try writer.count(Query(entity: stored))
        switch step.action {
        case let .splitEntity(fields, into):
            return try split(stored, total: total, fields: fields, into: into, step: index)
        case let .mergeEntity(into):
            return try merge(stored, total: total, into: into, step: index)
        default:
            break
        }
        let target = try describe(stored, after: step, index: index)
        if case let .renameField(field, newName) = step.action {
            let renames = zip(Self.columns(of: field, in: stored), Self.columns(of: newName, in: target)).map { (old: $0, new: $1) }
            // In place, the backend refuses a new name its storage has, so no row can hold it.
            if try writer.renameColumns(renames, in: stored, to: target) {
                report(index, entity: stored.name, done: 0, of: total)
                report(index, entity: stored.name, done: total, of: total)
                return total
            }
            if try anyRow(of: stored, { !$0.value(newName).isNull }) {
                throw failure(index, "entity \"\(stored.name)\" already has a field \"\(newName)\"; drop it first or pick another name")
            }
        }
        switch step.action {
        case .addIndex, .dropIndex:
            // Only the description changes: one put carries it, and the backend builds or drops
            // the index over every row.
            report(index, entity: stored.name, done: 0, of: total)
            if target != stored, let first = try firstRow(of: stored) {
                try writer.put(target, id: first.value(stored.idColumn), row: first)
            }
            report(index, entity: stored.name, done: total, of: total)
        case let .changeType(field, convert):
            if try !convertInPlace(field, by: convert, of: stored, as: target, total: total, step: index) {
                try replace(field, of: stored, as: target, total: total, step: index)
            }
        case let .addField(field, _, _):
            try replace(field, of: stored, as: target, total: total, step: index)
        default:
            try rewrite(stored, as: target, total: total, step: index)
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
        return total
    }

    /// Applies the step to every row of `stored` and puts each one it changed under `target`
    /// (a renamed entity's rows all, deleting them from the old name). A description change
    /// (columns, indexes) reaches the backend with the first put: its own "description changed"
    /// path builds or drops indexes over every row, so a row the step left as it was is not
    /// written again.
    private func rewrite(_ stored: EntityDescription, as target: EntityDescription, total: Int, step index: Int) throws {
        let action = version.steps[index].action
        let idColumn = stored.idColumn
        var described = target == stored
        try each(stored, total: total, step: index) { row in
            let id = row.value(idColumn)
            let changed = try converted(row, by: action, of: stored, idColumn: idColumn, step: index)
            if target.name != stored.name {
                try writer.put(target, id: id, row: changed)
                try writer.delete(stored, id: id)
            } else if !described || changed != row {
                try writer.put(target, id: id, row: changed)
                described = true
            }
        }
    }

    /// Runs a type change through ``WriteTransaction/convertColumn(_:in:_:converted:)``, which
    /// converts every value where it is stored; false when the backend declines (or the step
    /// changes the description or the id column), having changed nothing.
    private func convertInPlace(_ field: String, by convert: @Sendable (Value) throws -> Value, of stored: EntityDescription,
                                as target: EntityDescription, total: Int, step index: Int) throws -> Bool {
        guard target == stored, field != stored.idColumn else { return false }
        var started = false
        var reported = 0
        func start() {
            if !started { report(index, entity: stored.name, done: 0, of: total) }
            started = true
        }
        let converted = try writer.convertColumn(field, in: stored, { id, value in
            do {
                return try convert(value)
            } catch {
                throw recordFailure(index, error, entity: stored, id: id)
            }
        }, converted: { done in
            start()
            if done > reported, done < total, done - reported >= Self.progressInterval {
                report(index, entity: stored.name, done: done, of: total)
                reported = done
            }
        })
        guard converted else { return false }
        start()
        report(index, entity: stored.name, done: total, of: total)
        return true
    }

    /// Runs a step that changes only `field` (a type change, an added field) through
    /// ``WriteTransaction/replaceColumn(_:in:as:pages:)``: the backend gets every row's new value
    /// a page at a time, and may set the column in bulk instead of a put per row.
    private func replace(_ field: String, of stored: EntityDescription, as target: EntityDescription, total: Int, step index: Int) throws {
        let action = version.steps[index].action
        let idColumn = stored.idColumn
        try writer.replaceColumn(field, in: stored, as: target) { write in
            var rows: [Row] = []
            var changed: [Bool] = []
            try each(stored, total: total, step: index) { row in
                let new = try converted(row, by: action, of: stored, idColumn: idColumn, step: index)
                rows.append(new)
                changed.append(new != row)
            } afterPage: {
                try write(ColumnPage(rows: rows, changed: changed))
                rows.removeAll(keepingCapacity: true)
                changed.removeAll(keepingCapacity: true)
            }
        }
    }

    /// `row` after `action`, the step's failure naming the record when it throws or changes the id.
    private func converted(_ row: Row, by action: MigrationStep.Action, of stored: EntityDescription, idColumn: String, step index: Int) throws -> Row {
        let id = row.value(idColumn)
        var changed = row
        do {
            try apply(action, to: &changed, entity: stored)
        } catch {
            throw recordFailure(index, error, entity: stored, id: id)
        }
        guard changed.value(idColumn).isIdentical(to: id) else {
            throw failure(index, "entity \"\(stored.name)\", record \(id): the step changed the record's id to \(changed.value(idColumn)); a migration cannot change ids")
        }
        return changed
    }

    /// The row of `entity` with the lowest id.
    func firstRow(of entity: EntityDescription) throws -> Row? {
        var first: Row?
        try writer.fetch(Query(entity: entity, sort: [SortTerm(column: entity.idColumn)], limit: 1)) { first = $0 }
        return first
    }

    private func report(_ index: Int, entity: String, done: Int, of total: Int) {
        progress?(MigrationProgress(version: version.number, step: index + 1, stepCount: version.steps.count,
                                    entity: entity, recordsDone: done, recordsTotal: total))
    }

    /// Runs `body` on each row of `entity`, a page at a time in id order (``pageSize``), and
    /// `afterPage` after each page, reporting progress at the start, every ``progressInterval``
    /// rows and at the end. `body` may write the row under the same id, or delete it: the next
    /// page starts after the last id read.
    func each(_ entity: EntityDescription, total: Int, step index: Int, _ body: (Row) throws -> Void,
              afterPage: () throws -> Void = {}) throws {
        report(index, entity: entity.name, done: 0, of: total)
        var done = 0
        try pages(of: entity) { page in
            for row in page {
                if done > 0, done % Self.progressInterval == 0 {
                    report(index, entity: entity.name, done: done, of: total)
                }
                try body(row)
                done += 1
            }
            try afterPage()
            return true
        }
        report(index, entity: entity.name, done: done, of: total)
    }

    /// Reads `entity`'s rows a page at a time in id order until `body` returns false.
    func pages(of entity: EntityDescription, _ body: ([Row]) throws -> Bool) throws {
        var last: Value?
        var page: [Row] = []
        page.reserveCapacity(pageSize ?? 0)
        repeat {
            page.removeAll(keepingCapacity: true)
            let query = try Query(entity: entity, predicate: last.map { .compare(column: entity.idColumn, .greater, $0) },
                                  sort: [SortTerm(column: entity.idColumn)], limit: pageSize)
            try writer.fetch(query) { page.append($0) }
            guard let final = page.last, try body(page) else { return }
            last = final.value(entity.idColumn)
        } while pageSize.map { page.count == $0 } ?? false
    }

    /// Whether any row of `entity` satisfies `test`, reading a page at a time.
    func anyRow(of entity: EntityDescription, _ test: (Row) -> Bool) throws -> Bool {
        var found = false
        try pages(of: entity) { page in
            found = page.contains(where: test)
            return !found
        }
        return found
    }

    /// The columns the rows of `entity` hold beyond its description's fields, in the order met.
    func undeclaredColumns(of entity: EntityDescription) throws -> [String] {
        var seen = Set(entity.fields)
        var columns: [String] = []
        try pages(of: entity) { page in
            for row in page {
                for column in row.columns where seen.insert(column).inserted { columns.append(column) }
            }
            return true
        }
        return columns
    }

    /// Throws unless `field` is a field of `stored` (declared, or held by a row) other than its id.
    func requireField(_ field: String, of stored: EntityDescription, step index: Int) throws {
        guard field != stored.idColumn else {
            throw failure(index, "\"\(field)\" is the id column of entity \"\(stored.name)\", which a migration cannot rename, drop, convert or move")
        }
        guard try stored.fields.contains(field) || anyRow(of: stored, { $0.index(of: field) != nil }) else {
            let known = Set(stored.fields + (try undeclaredColumns(of: stored))).sorted().joined(separator: ", ")
            throw failure(index, "entity \"\(stored.name)\" has no field \"\(field)\"; its fields are \(known)")
        }
    }

    /// The field's column and its folded shadow columns present in `entity` (a searchable
    /// field's shadows move and go with it).
    static func columns(of field: String, in entity: EntityDescription) -> [String] {
        [field] + TextMatchOptions.variants.map { TextFolding.shadowColumn(for: field, options: $0) }.filter(entity.fields.contains)
    }

    /// The entity's description once `step` ran, after checking that the step fits it.
    private func describe(_ stored: EntityDescription, after step: MigrationStep, index: Int) throws -> EntityDescription {
        var entity = stored
        func requireField(_ field: String) throws {
            try self.requireField(field, of: stored, step: index)
        }
        switch step.action {
        case let .addField(field, indexed, _):
            if !entity.fields.contains(field) { entity.fields.append(field) }
            if indexed, !entity.indexes.contains(field) { entity.indexes.append(field) }
        case let .renameField(field, newName):
            try requireField(field)
            // A row holding the name undeclared is found before any row is rewritten (run(step:)).
            guard !stored.fields.contains(newName) else {
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
            guard try field == stored.idColumn || stored.fields.contains(field) || anyRow(of: stored, { $0.index(of: field) != nil }) else {
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
            let columns = renamedColumns.renaming(row.columns, field: field, to: newName, in: entity) {
                Dictionary(uniqueKeysWithValues: zip(Self.columns(of: field, in: entity), Self.columns(of: newName, in: entity.renaming(field, to: newName))))
            }
            row = Row(columns: columns, values: row.values)
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

/// A rename's new column list for the last row shape it met: rows of one shape (one record
/// type) then share one array, which a backend can recognise without comparing names (LMDB's
/// row layouts), and the renames are worked out once per shape, not per row.
final class RenamedColumns {
    private struct Key: Equatable {
        var columns: [String]
        var field: String
        var newName: String
        var entity: EntityDescription
    }

    private var last: (key: Key, renamed: [String])?

    /// `columns` with each name `renames` maps renamed, in place, for the rename of `field` to
    /// `newName` in `entity` (which decides the shadow columns that go with it).
    func renaming(_ columns: [String], field: String, to newName: String, in entity: EntityDescription,
                  _ renames: () -> [String: String]) -> [String] {
        let key = Key(columns: columns, field: field, newName: newName, entity: entity)
        if let last, last.key == key { return last.renamed }
        let map = renames()
        let renamed = columns.map { map[$0] ?? $0 }
        last = (key, renamed)
        return renamed
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
