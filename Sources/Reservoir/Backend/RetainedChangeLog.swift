/// A change log the core keeps for a backend that does not want to write one: a value, so it
/// travels with the backend's snapshot (copied into a transaction, swapped in at commit), and
/// answers the ``ReadTransaction`` and ``WriteTransaction`` log calls as the contract says.
/// A persistent backend saves ``entries`` and ``lastSequence`` with its data and rebuilds the
/// log from them when it opens.
///
///     func record(_ changeSet: ChangeSet) throws { state.log.record(changeSet) }
///     func lastSequence() throws -> UInt64 { state.log.lastSequence }
///     func lastCommit() throws -> CommitPosition { state.log.lastCommit }
///     func commit(at sequence: UInt64) throws -> CommitPosition? { state.log.commit(at: sequence) }
///     func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry] {
///         state.log.entries(after: sequence, limit: limit)
///     }
public struct RetainedChangeLog: Sendable, Equatable {
    /// The entries kept, in sequence order: those of the newest `retention` change sets.
    public private(set) var entries: [ChangeLogEntry]
    /// The sequence of the newest change set recorded (0 when none).
    public private(set) var lastSequence: UInt64
    /// The identity of the newest change set's commit (0 when none, or not known).
    public private(set) var lastCommitIdentity: UInt64
    /// How many change sets' entries are kept.
    public let retention: Int

    /// A log continuing from `lastSequence`, holding `entries` (as saved), keeping `retention` change sets.
    public init(retention: Int = 10_000, lastSequence: UInt64 = 0, entries: [ChangeLogEntry] = []) {
        self.retention = max(1, retention)
        // As saved, never guessed from the entries: a backend that lost its sequence must
        // not look right while its log still holds the newest change set.
        self.lastSequence = lastSequence
        self.entries = entries
        lastCommitIdentity = entries.last.map { $0.sequence == lastSequence ? $0.commit : 0 } ?? 0
    }

    /// The newest change set's position.
    public var lastCommit: CommitPosition {
        CommitPosition(sequence: lastSequence, commit: lastCommitIdentity)
    }

    /// The position of change set `sequence` while the log holds it.
    public func commit(at sequence: UInt64) -> CommitPosition? {
        if sequence == lastSequence { return lastCommit }
        // Binary search: entries are in sequence order.
        var low = entries.startIndex, high = entries.endIndex
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        guard low < entries.endIndex, entries[low].sequence == sequence else { return nil }
        return CommitPosition(sequence: sequence, commit: entries[low].commit)
    }

    /// Appends the change set's ``ChangeSet/logEntries``, makes its sequence the last, and
    /// drops the change sets retention lets go.
    public mutating func record(_ changeSet: ChangeSet) {
        entries.append(contentsOf: changeSet.logEntries)
        lastSequence = changeSet.sequence
        lastCommitIdentity = changeSet.commit
        let oldest = lastSequence > UInt64(retention) ? lastSequence - UInt64(retention) : 0
        if let first = entries.first, first.sequence <= oldest {
            entries.removeAll { $0.sequence <= oldest }
        }
    }

    /// The entries of at most `limit` change sets after `sequence`, in sequence order.
    public func entries(after sequence: UInt64, limit: Int) -> [ChangeLogEntry] {
        var taken: [ChangeLogEntry] = []
        var changeSets = 0
        for entry in entries where entry.sequence > sequence {
            if taken.last?.sequence != entry.sequence {
                guard changeSets < limit else { break }
                changeSets += 1
            }
            taken.append(entry)
        }
        return taken
    }
}
