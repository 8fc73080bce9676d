/// How a live subscription turns "its results changed" into the values it sends.
///
/// One engine (``LiveSubscription``) serves every fetch-driven publisher; an output
/// says what a change looks like to its subscribers.
protocol LiveOutput {
    associatedtype Record: Storable
    associatedtype Value

    /// Whether building a value needs the whole list as last sent (not only the delta).
    static var needsPreviousList: Bool { get }

    /// The value for a change from `previous` to `current`, or nil when this output sees no
    /// change. `previous` is empty unless ``needsPreviousList`` or the change was coalesced.
    /// The initial value (`initial`) is produced even when it is empty, so a subscriber
    /// can tell "nothing matches" from "not fetched yet".
    static func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> Value?
}

/// `CollectionDifference`s: removals at offsets in the list last sent, insertions at
/// offsets in the new list.
enum DifferenceOutput<Record: Storable>: LiveOutput {
    static var needsPreviousList: Bool { false }

    static func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> CollectionDifference<Record>? {
        guard initial || !delta.isEmpty else { return nil }
        let changes = delta.removed.map { CollectionDifference<Record>.Change.remove(offset: $0.offset, element: $0.entry.record, associatedWith: nil) }
            + delta.inserted.map { CollectionDifference<Record>.Change.insert(offset: $0.offset, element: $0.entry.record, associatedWith: nil) }
        guard let difference = CollectionDifference(changes) else {
            throw ReservoirError(.backend, "internal: live results produced an inconsistent difference (\(delta.removed.count) removals, \(delta.inserted.count) insertions)")
        }
        return difference
    }
}

/// The whole current list, each time it changes.
enum ObjectsOutput<Record: Storable>: LiveOutput {
    static var needsPreviousList: Bool { false }

    static func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> [Record]? {
        initial || !delta.isEmpty ? current.map(\.record) : nil
    }
}

/// Identity-based changes for list UIs (``ResultsChange``).
enum ResultsChangeOutput<Record: Storable>: LiveOutput {
    static var needsPreviousList: Bool { true }

    static func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> ResultsChange<Record>? {
        initial || !delta.isEmpty ? ResultsChange(from: previous.array, to: current.array) : nil
    }
}
