/// How a live subscription turns "its results changed" into the values it sends.
///
/// One engine (``LiveSubscription``) serves every fetch-driven publisher; an output
/// says what a change looks like to its subscribers. An instance, so an output can carry
/// parameters (a section key, say).
protocol LiveOutput {
    associatedtype Record: Storable
    associatedtype Value

    /// Whether building a value needs the whole list as last sent (not only the delta).
    var needsPreviousList: Bool { get }

    /// Throws when this output cannot serve `query`; the subscription then fails with the error.
    func check(_ query: Query) throws

    /// The value for a change from `previous` to `current`, or nil when this output sees no
    /// change. `previous` is the list last sent only when ``needsPreviousList`` or the change
    /// was coalesced (otherwise it is any list, unused: `delta` describes the change).
    /// The initial value (`initial`) is produced even when it is empty, so a subscriber
    /// can tell "nothing matches" from "not fetched yet".
    func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> Value?
}

extension LiveOutput {
    var needsPreviousList: Bool { false }
    func check(_ query: Query) throws {}
}

/// `CollectionDifference`s: removals at offsets in the list last sent, insertions at
/// offsets in the new list.
struct DifferenceOutput<Record: Storable>: LiveOutput {
    func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> CollectionDifference<Record>? {
        guard initial || !delta.isEmpty else { return nil }
        // Appended into one array rather than two maps joined: this is unspecialized generic
        // code, run for every commit a subscriber sees.
        var changes: [CollectionDifference<Record>.Change] = []
        changes.reserveCapacity(delta.removed.count + delta.inserted.count)
        for removal in delta.removed {
            changes.append(.remove(offset: removal.offset, element: removal.entry.record, associatedWith: nil))
        }
        for insertion in delta.inserted {
            changes.append(.insert(offset: insertion.offset, element: insertion.entry.record, associatedWith: nil))
        }
        guard let difference = CollectionDifference(changes) else {
            throw ReservoirError(.backend, "internal: live results produced an inconsistent difference (\(delta.removed.count) removals, \(delta.inserted.count) insertions)")
        }
        return difference
    }
}

/// The whole current list, each time it changes.
struct ObjectsOutput<Record: Storable>: LiveOutput {
    func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> [Record]? {
        initial || !delta.isEmpty ? current.map { $0.record } : nil
    }
}

/// Identity-based changes for list UIs (``ResultsChange``).
struct ResultsChangeOutput<Record: Storable>: LiveOutput {
    var needsPreviousList: Bool { true }

    func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> ResultsChange<Record>? {
        initial || !delta.isEmpty ? ResultsChange(from: previous.array, to: current.array) : nil
    }
}

/// The number of results, each time it changes.
struct CountOutput<Record: Storable>: LiveOutput {
    func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> Int? {
        // Removals and insertions are against the list the subscriber last counted, so
        // equal numbers of each (an update, a move, a swap) leave its count as it was.
        initial || delta.removed.count != delta.inserted.count ? current.count : nil
    }
}
