/// The remote change sets a following replica has heard (``Sync/start()``), so that a pull
/// can apply them without reading the remote again.
///
/// The remote store delivers every change set it commits or reads from its log, in order,
/// with the rows its catch-up read (what a live subscription gets); each one heard is kept
/// with the position heard before it, so the kept ones form a chain of positions. A pull
/// whose token is a link of the chain applies the change sets after it, up to the first that
/// is not complete (the log was trimmed, the history rewound, a migration): from there it
/// reads the remote's history as before. A token that is the chain's end means there is
/// nothing newer to pull: anything committed later is heard later, and starts a round.
struct HeardChangeSets {
    /// Whether the remote store's change sets are being heard (between start and stop).
    var isHearing = false
    /// The position of the last change set heard.
    var last: CommitPosition?
    /// The change sets heard, each with the position heard before it, oldest first.
    var entries: [(previous: CommitPosition?, changeSet: ChangeSet)] = []

    /// Change sets kept at most (the oldest go first; a pull that needs them reads instead).
    static let limit = 1000

    mutating func hear(_ changeSet: ChangeSet) {
        guard isHearing else { return }
        entries.append((last, changeSet))
        if entries.count > Self.limit { entries.removeFirst(entries.count - Self.limit) }
        last = changeSet.position
    }

    /// Starts the chain at `position`, the remote store's own, taken while it delivered
    /// nothing: only before anything was heard (see ``Sync``'s `hear`).
    mutating func anchor(at position: CommitPosition) {
        guard isHearing, last == nil, entries.isEmpty else { return }
        last = position
    }

    mutating func stopHearing() {
        self = HeardChangeSets()
    }

    /// What a pull from `token` can take from what was heard: nil when the token is not on
    /// the chain (read the remote); else the complete change sets after it, in order, and
    /// whether they reach the chain's end (nothing newer heard). Forgets what the token
    /// already covers.
    mutating func take(after token: CommitPosition) -> (changeSets: [ChangeSet], reachesEnd: Bool)? {
        guard isHearing, let start = entries.firstIndex(where: { entry in
            entry.previous?.isSameCommit(as: token) ?? false || entry.changeSet.position.isSameCommit(as: token)
        }) else { return nil }
        let first = entries[start].changeSet.position.isSameCommit(as: token) ? start + 1 : start
        var taken: [ChangeSet] = []
        var end = first
        while end < entries.count, entries[end].changeSet.isComplete {
            taken.append(entries[end].changeSet)
            end += 1
        }
        let reachesEnd = end == entries.count
        entries.removeFirst(first)
        return (taken, reachesEnd)
    }
}
