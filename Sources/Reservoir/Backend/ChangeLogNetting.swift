/// Nets the change-log entries of one change set into one entry per record, for every
/// backend: a log may name one record several times (a plain SQL transaction logged by
/// triggers, or entries of several commits read together).
///
/// What a record's first and last events say decides: not there before and not after is
/// nothing; not there before is an insert; not there after is a delete; else an update.
/// An ``Event/existed`` event (an insert that found the row already there, which SQLite's
/// triggers log before the replace) says the record existed without changing it.
public struct ChangeLogNetting {
    /// What one log entry says happened to a record.
    public enum Event: String, Sendable {
        /// The record was there already; nothing changed by this event alone.
        case existed
        /// The record was inserted.
        case inserted
        /// The record was updated.
        case updated
        /// The record was deleted.
        case deleted

        /// The event of a log entry of `kind`.
        public init(_ kind: ChangeType) {
            switch kind {
            case .inserted: self = .inserted
            case .updated: self = .updated
            case .deleted: self = .deleted
            }
        }

        /// Whether the record existed before this event.
        var before: Bool { self != .inserted }
        /// Whether it exists after.
        var after: Bool { self != .deleted }
    }

    private struct Key: Hashable {
        var entity: String
        var id: Value
    }

    private struct State {
        var existedBefore: Bool
        var existsAfter: Bool
        var changed: Bool
    }

    private var order: [Key] = []
    private var states: [Key: State] = [:]

    /// Empty netting.
    public init() {}

    /// Whether nothing has been added since the last flush.
    public var isEmpty: Bool { order.isEmpty }

    /// Adds what one entry says happened to record `id` of `entity`.
    public mutating func add(entity: String, id: Value, _ event: Event) {
        let key = Key(entity: entity, id: id)
        if let index = states.index(forKey: key) {
            states.values[index].existsAfter = event.after
            states.values[index].changed = states.values[index].changed || event != .existed
        } else {
            order.append(key)
            states[key] = State(existedBefore: event.before, existsAfter: event.after, changed: event != .existed)
        }
    }

    /// Calls `body` with each record's net change, in the order records were first added,
    /// and empties the netting.
    public mutating func flush(_ body: (_ entity: String, _ id: Value, _ kind: ChangeType) throws -> Void) rethrows {
        defer {
            order.removeAll(keepingCapacity: true)
            states.removeAll(keepingCapacity: true)
        }
        for key in order {
            guard let state = states[key], state.changed else { continue }
            switch (state.existedBefore, state.existsAfter) {
            case (false, true): try body(key.entity, key.id, .inserted)
            case (true, true): try body(key.entity, key.id, .updated)
            case (true, false): try body(key.entity, key.id, .deleted)
            case (false, false): continue
            }
        }
    }

    /// Appends each record's net change to `result` as entries of change set `sequence`, made
    /// by the commit `commit`, and empties the netting.
    public mutating func flush(sequence: UInt64, commit: UInt64 = 0, into result: inout [ChangeLogEntry]) {
        flush { entity, id, kind in result.append(ChangeLogEntry(sequence: sequence, entity: entity, id: id, kind: kind, commit: commit)) }
    }
}
