/// The steps that move records between entities: ``MigrationStep/splitEntity(_:fields:into:)``
/// and ``MigrationStep/mergeEntity(_:into:)``. Like every step they go through the SPI every
/// backend has (put, delete, then ``WriteTransaction/dropColumns(_:from:)`` or
/// ``WriteTransaction/dropEntity(_:)``), inside the version's write transaction.
extension MigrationRunner {
    /// Throws unless `name` holds no records, so a step can fill it.
    func requireUnused(_ name: String, step index: Int, by doing: String) throws {
        if try stored(name) != nil {
            throw failure(index, "entity \"\(name)\" already holds records; \(doing) a name not in use")
        }
    }

    /// Moves `fields` of every row of `stored` into a row of `newName` with the same id.
    func split(_ stored: EntityDescription, total: Int, fields: [String], into newName: String, step index: Int) throws -> Int {
        guard newName != stored.name else {
            throw failure(index, "entity \"\(stored.name)\" cannot be split into itself; name a new entity")
        }
        for field in fields { try requireField(field, of: stored, step: index) }
        try requireUnused(newName, step: index, by: "split \"\(stored.name)\" into")
        var moved: [String] = []
        for column in fields.flatMap({ Self.columns(of: $0, in: stored) }) where !moved.contains(column) { moved.append(column) }
        var source = stored
        source.fields.removeAll(where: moved.contains)
        source.indexes.removeAll(where: moved.contains)
        let target = EntityDescription(name: newName, idColumn: stored.idColumn, fields: [stored.idColumn] + moved,
                                       indexes: stored.indexes.filter(moved.contains), integerIDs: stored.integerIDs)
        try each(stored, total: total, step: index) { row in
            let id = row.value(stored.idColumn)
            var part = Row(columns: [stored.idColumn], values: [id])
            var rest = row
            for column in moved {
                if let value = row[column] { part[column] = value }
                rest[column] = nil
            }
            try writer.put(target, id: id, row: part)
            try writer.put(source, id: id, row: rest)
        }
        try writer.dropColumns(moved, from: source)
        return total
    }

    /// Moves every row of `stored` into the row of `targetName` with the same id, then removes `stored`.
    func merge(_ stored: EntityDescription, total: Int, into targetName: String, step index: Int) throws -> Int {
        guard targetName != stored.name else {
            throw failure(index, "entity \"\(stored.name)\" cannot be merged into itself; name another entity")
        }
        guard let target = try self.stored(targetName) else {
            throw failure(index, "entity \"\(targetName)\" holds no records to merge the records of \"\(stored.name)\" into")
        }
        var moved: [String] = []
        for column in stored.fields + (try undeclaredColumns(of: stored)) where column != stored.idColumn && !moved.contains(column) { moved.append(column) }
        let shared = moved.filter { $0 == target.idColumn || target.fields.contains($0) }
        guard shared.isEmpty else {
            throw failure(index, "entities \"\(stored.name)\" and \"\(targetName)\" both have \(shared.map { "\"\($0)\"" }.joined(separator: ", ")); rename or drop one first")
        }
        var merged = target
        merged.fields += moved
        merged.indexes += stored.indexes.filter { $0 != stored.idColumn && !merged.indexes.contains($0) }
        try each(stored, total: total, step: index) { row in
            let id = row.value(stored.idColumn)
            guard var into = try writer.row(targetName, id: id) else {
                throw failure(index, "entity \"\(stored.name)\", record \(id): entity \"\(targetName)\" has no record with that id to merge it into")
            }
            for column in moved {
                guard let value = row[column] else { continue }
                if let held = into[column], !held.isNull {
                    throw failure(index, "entity \"\(stored.name)\", record \(id): the record of \"\(targetName)\" already holds \"\(column)\"")
                }
                into[column] = value
            }
            try writer.put(merged, id: id, row: into)
            try writer.delete(stored, id: id)
        }
        try writer.dropEntity(stored)
        return total
    }
}
