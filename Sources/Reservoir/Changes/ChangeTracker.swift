/// Accumulates what a write transaction does and nets it into a ``ChangeSet``:
/// insert-then-update is one insert, insert-then-delete is nothing, delete-then-insert
/// is an update, and a record written back to its original row is no change.
struct ChangeTracker {
    private struct Touch {
        var before: Row?
        var after: Row?
    }

    private struct EntityTouches {
        var entity: EntityDescription
        var order: [Value] = []
        var touches: [Value: Touch] = [:]
    }

    private var entities: [String: EntityTouches] = [:]

    /// Records that `id` went from `before` to `after`; `before` counts only on first touch.
    mutating func note(_ entity: EntityDescription, id: Value, before: Row?, after: Row?) {
        // Take the entry out while mutating it: a copy left in the dictionary would make
        // every note copy the whole `order` and `touches` (quadratic in the transaction's size).
        var touched = entities.removeValue(forKey: entity.name) ?? EntityTouches(entity: entity)
        if touched.touches[id] != nil {
            touched.touches[id]?.after = after
        } else {
            touched.order.append(id)
            touched.touches[id] = Touch(before: before, after: after)
        }
        entities[entity.name] = touched
    }

    func changeSet(sequence: UInt64) -> ChangeSet? {
        var result: [EntityChanges] = []
        for touched in entities.values {
            var changes = EntityChanges(entity: touched.entity.name)
            for id in touched.order {
                guard let touch = touched.touches[id] else { continue }
                switch (touch.before, touch.after) {
                case (nil, let row?):
                    changes.inserted.append(RowChange(id: id, row: row))
                case (let before?, nil):
                    changes.deleted.append(id)
                    changes.deletedRows.append(RowChange(id: id, row: before))
                case let (before?, after?) where before != after:
                    changes.updated.append(RowChange(id: id, row: after))
                default:
                    break
                }
            }
            if !changes.isEmpty { result.append(changes) }
        }
        return result.isEmpty ? nil : ChangeSet(sequence: sequence, entities: result)
    }
}
