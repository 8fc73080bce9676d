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

    /// The entities touched, few per transaction, each mutated in place (a copy taken out and
    /// put back would copy its `order` and `touches` on every note: quadratic in the size).
    private var entities: [EntityTouches] = []

    /// Records that `id` went from `before` to `after`; `before` counts only on first touch.
    mutating func note(_ entity: EntityDescription, id: Value, before: Row?, after: Row?) {
        let position: Int
        if let found = entities.firstIndex(where: { $0.entity.name == entity.name }) {
            position = found
        } else {
            entities.append(EntityTouches(entity: entity))
            position = entities.count - 1
        }
        if let index = entities[position].touches.index(forKey: id) {
            entities[position].touches.values[index].after = after
        } else {
            entities[position].order.append(id)
            entities[position].touches[id] = Touch(before: before, after: after)
        }
    }

    func changeSet(sequence: UInt64) -> ChangeSet? {
        var result: [EntityChanges] = []
        for touched in entities {
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
