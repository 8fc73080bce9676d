/// Turns change-log entries back into change sets, loading the current rows.
enum ChangeLogReader {
    /// One change set per sequence, with the entries of each id netted (a plain SQL
    /// transaction may log one id several times): first inserted and last deleted is
    /// nothing; first inserted is an insert; last deleted is a delete; else an update.
    /// An inserted or updated record whose row is gone (deleted by a later commit) is left
    /// out; that later commit's deletion removes it.
    static func changeSets(from entries: [ChangeLogEntry], reader: any ReadTransaction) throws -> [ChangeSet] {
        var result: [ChangeSet] = []
        var index = entries.startIndex
        while index < entries.endIndex {
            let sequence = entries[index].sequence
            var order: [(entity: String, id: Value)] = []
            var kinds: [String: [Value: (first: ChangeType, last: ChangeType)]] = [:]
            while index < entries.endIndex && entries[index].sequence == sequence {
                let entry = entries[index]
                if let seen = kinds[entry.entity]?[entry.id] {
                    kinds[entry.entity]?[entry.id] = (seen.first, entry.kind)
                } else {
                    kinds[entry.entity, default: [:]][entry.id] = (entry.kind, entry.kind)
                    order.append((entry.entity, entry.id))
                }
                index += 1
            }
            var byEntity: [String: EntityChanges] = [:]
            for (entity, id) in order {
                guard let kind = kinds[entity]?[id] else { continue }
                var changes = byEntity[entity] ?? EntityChanges(entity: entity)
                switch (kind.first, kind.last) {
                case (.inserted, .deleted):
                    break
                case (_, .deleted):
                    changes.deleted.append(id)
                case (let first, _):
                    if let row = try reader.row(entity, id: id) {
                        let change = RowChange(id: id, row: row)
                        if first == .inserted { changes.inserted.append(change) } else { changes.updated.append(change) }
                    }
                }
                byEntity[entity] = changes
            }
            result.append(ChangeSet(sequence: sequence, entities: byEntity.values.filter { !$0.isEmpty }, isExternal: true))
        }
        return result
    }
}
