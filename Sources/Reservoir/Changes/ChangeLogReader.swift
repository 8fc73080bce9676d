/// Turns change-log entries back into change sets, loading the current rows.
enum ChangeLogReader {
    /// One change set per sequence, with the entries of each id netted by
    /// ``ChangeLogNetting``. An inserted or updated record whose row is gone (deleted by a
    /// later commit) is left out; that later commit's deletion removes it.
    static func changeSets(from entries: [ChangeLogEntry], reader: any ReadTransaction) throws -> [ChangeSet] {
        var result: [ChangeSet] = []
        var netting = ChangeLogNetting()
        var index = entries.startIndex
        while index < entries.endIndex {
            let sequence = entries[index].sequence
            let commit = entries[index].commit
            while index < entries.endIndex && entries[index].sequence == sequence {
                let entry = entries[index]
                netting.add(entity: entry.entity, id: entry.id, ChangeLogNetting.Event(entry.kind))
                index += 1
            }
            var byEntity: [String: EntityChanges] = [:]
            try netting.flush { entity, id, kind in
                // Modified in place: a copy taken out and put back would copy its arrays per id.
                switch kind {
                case .deleted:
                    byEntity[entity, default: EntityChanges(entity: entity)].deleted.append(id)
                case .inserted, .updated:
                    guard let row = try reader.row(entity, id: id) else { return }
                    let change = RowChange(id: id, row: row)
                    if kind == .inserted {
                        byEntity[entity, default: EntityChanges(entity: entity)].inserted.append(change)
                    } else {
                        byEntity[entity, default: EntityChanges(entity: entity)].updated.append(change)
                    }
                }
            }
            result.append(ChangeSet(sequence: sequence, entities: byEntity.values.filter { !$0.isEmpty }, isExternal: true, commit: commit))
        }
        return result
    }
}
