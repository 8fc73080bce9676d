/// Turns change-log entries back into change sets.
enum ChangeLogReader {
    /// One change set's netted changes, as the log holds them (no rows).
    struct Netted {
        var position: CommitPosition
        var changes: [(entity: String, id: Value, kind: ChangeType)]
    }

    /// One per sequence, in order, with the entries of each id netted by ``ChangeLogNetting``
    /// (a sequence whose entries net to nothing has no changes: the catch-up skips past it).
    static func netted(_ entries: [ChangeLogEntry]) -> [Netted] {
        var result: [Netted] = []
        var netting = ChangeLogNetting()
        var index = entries.startIndex
        while index < entries.endIndex {
            let position = CommitPosition(sequence: entries[index].sequence, commit: entries[index].commit)
            while index < entries.endIndex && entries[index].sequence == position.sequence {
                let entry = entries[index]
                netting.add(entity: entry.entity, id: entry.id, ChangeLogNetting.Event(entry.kind))
                index += 1
            }
            var changes: [(entity: String, id: Value, kind: ChangeType)] = []
            netting.flush { entity, id, kind in changes.append((entity, id, kind)) }
            result.append(Netted(position: position, changes: changes))
        }
        return result
    }

    /// One change set per sequence (``netted(_:)``), loading the current rows. An inserted or
    /// updated record whose row is gone (deleted by a later commit) is left out; that later
    /// commit's deletion removes it.
    static func changeSets(from entries: [ChangeLogEntry], reader: any ReadTransaction) throws -> [ChangeSet] {
        try netted(entries).map { netted in
            var byEntity: [String: EntityChanges] = [:]
            for (entity, id, kind) in netted.changes {
                // Modified in place: a copy taken out and put back would copy its arrays per id.
                switch kind {
                case .deleted:
                    byEntity[entity, default: EntityChanges(entity: entity)].deleted.append(id)
                case .inserted, .updated:
                    guard let row = try reader.row(entity, id: id) else { continue }
                    let change = RowChange(id: id, row: row)
                    if kind == .inserted {
                        byEntity[entity, default: EntityChanges(entity: entity)].inserted.append(change)
                    } else {
                        byEntity[entity, default: EntityChanges(entity: entity)].updated.append(change)
                    }
                }
            }
            // A migration's change set carries its mark as the record of the version it applied.
            let isSchemaChange = byEntity[SchemaLedger.entityName] != nil
            return ChangeSet(sequence: netted.position.sequence, entities: byEntity.values.filter { !$0.isEmpty },
                             isExternal: true, commit: netted.position.commit, isSchemaChange: isSchemaChange)
        }
    }
}
