/// Accumulates what a write transaction does and nets it into a ``ChangeSet``:
/// insert-then-update is one insert, insert-then-delete is nothing, delete-then-insert
/// is an update, and a record written back to its original row is no change.
///
/// Bulk inserts are the common large transaction, so they cost no hashing and no copying:
/// while an entity has seen only inserts the backend accepted as new, every touch is a
/// distinct record, and the inserts are kept as the change set's own `inserted` list. Once
/// anything else touches the entity, touches are found by id: by a scan while they are
/// few, through an id → position index beyond that.
struct ChangeTracker {
    private struct Touch {
        var id: Value
        var before: Row?
        var after: Row?
        /// `before` and `after` are known to differ: the one write that made the touch compared
        /// them, so the change set does not compare them again.
        var differs = false
    }

    private struct EntityTouches {
        var entity: EntityDescription
        /// Accepted inserts, in order, while nothing else touched the entity (`tracking` false).
        var fresh: [RowChange] = []
        /// Whether every touch is in `touches` (the entity saw something besides fresh inserts).
        var tracking = false
        /// Every touch in first-touch order, once `tracking`.
        var touches: [Touch] = []
        /// The position of each id in `touches`, kept once there are more than
        /// ``linearSearchLimit`` touches; below that a scan is cheaper than hashing.
        var positions: [Value: Int] = [:]

        /// Moves fresh inserts into `touches`, once.
        mutating func track() {
            guard !tracking else { return }
            tracking = true
            touches.reserveCapacity(fresh.count + 1)
            for insert in fresh {
                touches.append(Touch(id: insert.id, before: nil, after: insert.row))
            }
            fresh = []
            if touches.count > linearSearchLimit { indexAll() }
        }

        func position(of id: Value) -> Int? {
            touches.count > linearSearchLimit ? positions[id] : touches.firstIndex { $0.id == id }
        }

        mutating func append(_ touch: Touch) {
            touches.append(touch)
            if touches.count == linearSearchLimit + 1 {
                indexAll()
            } else if touches.count > linearSearchLimit {
                positions[touch.id] = touches.count - 1
            }
        }

        private mutating func indexAll() {
            positions.reserveCapacity(touches.count)
            for (position, touch) in touches.enumerated() { positions[touch.id] = position }
        }
    }

    /// How many touches of one entity are searched by a scan before an id index is built:
    /// most write transactions touch a record or a few.
    static let linearSearchLimit = 8

    /// The entities touched, few per transaction, each mutated in place (a copy taken out and
    /// put back would copy its arrays on every note: quadratic in the size).
    private var entities: [EntityTouches] = []

    private mutating func position(of entity: EntityDescription) -> Int {
        if let last = entities.indices.last, entities[last].entity.name == entity.name { return last }
        if let found = entities.firstIndex(where: { $0.entity.name == entity.name }) { return found }
        entities.append(EntityTouches(entity: entity))
        return entities.count - 1
    }

    /// Records that `id` went from `before` to `after`; `before` counts only on first touch.
    /// `differing` says the caller found `before` and `after` different.
    mutating func note(_ entity: EntityDescription, id: Value, before: Row?, after: Row?, differing: Bool = false) {
        let slot = position(of: entity)
        entities[slot].track()
        if let existing = entities[slot].position(of: id) {
            entities[slot].touches[existing].after = after
            entities[slot].touches[existing].differs = false
        } else {
            entities[slot].append(Touch(id: id, before: before, after: after, differs: differing))
        }
    }

    /// Records an insert the backend accepted because no row had `id`: either a record
    /// new to the transaction or one it deleted earlier.
    /// Takes `id` and `row` over (the caller's last use of them), so keeping them costs no
    /// retain.
    mutating func noteInserted(_ entity: EntityDescription, id: consuming Value, row: consuming Row) {
        let slot = position(of: entity)
        if !entities[slot].tracking {
            // Only fresh inserts so far: none of them can have this id (the backend would
            // have refused it), and nothing was deleted.
            entities[slot].fresh.append(RowChange(id: id, row: row))
        } else {
            note(entity, id: id, before: nil, after: row)
        }
    }

    /// The change set of what was touched, numbered `sequence` and given a fresh commit
    /// identity, or nil when nothing changed.
    func changeSet(sequence: UInt64) -> ChangeSet? {
        var result: [EntityChanges] = []
        for touched in entities {
            var changes = EntityChanges(entity: touched.entity.name, inserted: touched.fresh)
            // Nested tests rather than a switch on `(before, after)`, which copied both rows.
            for touch in touched.touches {
                if let after = touch.after {
                    if let before = touch.before {
                        if touch.differs || before != after { changes.updated.append(RowChange(id: touch.id, row: after)) }
                    } else {
                        changes.inserted.append(RowChange(id: touch.id, row: after))
                    }
                } else if let before = touch.before {
                    changes.deleted.append(touch.id)
                    changes.deletedRows.append(RowChange(id: touch.id, row: before))
                }
            }
            if !changes.isEmpty { result.append(changes) }
        }
        return result.isEmpty ? nil : ChangeSet(sequence: sequence, entities: result, commit: CommitPosition.newIdentity())
    }
}
