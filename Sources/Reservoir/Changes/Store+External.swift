import Foundation

/// Commits made by other processes (or other `Store`s on the same location) reach this
/// store through the backend's persisted change log: the ``CommitPoller`` probes the
/// backend's ``StorageBackend/commitToken()`` when the backend's commit signal fires (and
/// on a timer); when the token moves, the log entries after the last announced sequence are
/// read, the changed rows loaded, and the change sets published like local ones. Own
/// commits are already announced, and the hub drops a sequence it has seen, so nothing is
/// announced twice. A store that fell behind the log's retention gets one incomplete change
/// set for the lost stretch (backends number change sets consecutively; one that skips
/// numbers causes extra re-reads, never wrong results).
///
/// Before taking newer commits as following the last one it announced, the store checks that
/// the log still holds that one under the same identity (``CommitPosition``). When the
/// history was rewound (the store's position is ahead of the newest commit, or its commit was
/// replaced by another with the same number: a lost tail, a restored backup), it announces
/// one ``ChangeSet/isRewound`` change set at the current position, and subscriptions re-read.
extension Store {
    /// How many change sets one catch-up reads at most; the rest wait for the next probe.
    static let catchUpBatch = 1000

    /// Starts watching for other processes' commits: event-driven where the backend has a
    /// commit signal (with a probe every `interval ?? 1 s` as the safety net), else a probe
    /// every `interval ?? 50 ms`.
    func startWatching(every interval: Duration?, usesCommitSignal: Bool) {
        let poller = self.poller
        let watch = usesCommitSignal ? backend.watchCommits { [weak poller] in poller?.wake() } : nil
        let hooks = CommitPoller.Hooks(
            token: { [weak self] in
                guard let self else { throw CancellationError() }
                return try self.backend.commitToken()
            },
            moved: { [weak self] in self?.catchUp() ?? .nothing },
            gone: { [weak self] in self?.stop($0) }
        )
        poller.start(every: interval ?? (watch == nil ? .milliseconds(50) : .seconds(1)), watch: watch, hooks: hooks)
    }

    /// Whether the caller is this store's commit signal's own thread, delivering what its probe
    /// found (``CommitWatch/wakesOnItsOwnThread``): a thread kept for this store, which its
    /// observers may keep busy.
    var isDeliveringOnItsSignalThread: Bool { poller.isProbingOnCurrentThread }

    /// The store's files are gone (``ReservoirError/Code/gone``): stop probing and end every
    /// live subscription with the error, instead of watching a file nobody writes any more.
    func stop(_ error: ReservoirError) {
        poller.stop()
        hub.fail(named(error))
    }

    /// Reads and announces commits this store has not announced yet, and returns once
    /// every change set it knows of has reached every observer (also one the poller found
    /// first and is still delivering).
    public func pollExternalChanges() {
        _ = catchUp()
    }

    /// ``pollExternalChanges()``, saying whether it found change sets this store had not
    /// enqueued (another process's commits) rather than only this store's own, or failed.
    func catchUp() -> CommitPoller.CatchUp {
        // Mostly no write of this store holds the write lock: one read under it does all.
        // Otherwise (the token moves for this store's own commits too) a read outside the lock
        // tells an own commit apart without waiting for the writer; an own commit not
        // enqueued yet is found under the lock to need nothing.
        let found: Bool?
        do {
            if let quick = try writeLock.withLockIfFree({ try enqueueExternalChanges(through: nil) }) {
                found = quick
            } else {
                if let latest = try? backend.read({ try $0.lastCommit() }), latest.isSameCommit(as: hub.lastPosition) {
                    hub.waitUntilDelivered(through: hub.lastTicket)
                    return .nothing
                }
                found = try writeLock.withLock { try enqueueExternalChanges(through: nil) }
            }
        } catch {
            found = nil
        }
        if let refusal = schemaGuard.refusal {
            // Another process migrated the store past this app: what came before is delivered, then every subscription ends.
            hub.deliver(through: hub.lastTicket)
            stop(named(refusal))
            return .failed
        }
        // Deliver what this call enqueued (also after an error part-way, which may have
        // enqueued some); a local commit's change set is its writer's to deliver.
        if found == false {
            hub.waitUntilDelivered(through: hub.lastTicket)
        } else {
            hub.deliver(through: hub.lastTicket)
        }
        switch found {
        case true?: return .found
        case false?: return .nothing
        case nil: return .failed
        }
    }

    /// Enqueues change sets from the log with sequences after the last enqueued, up to
    /// `target` (the commit a write of this store's followed; nil: the newest); or, when the
    /// log no longer holds the last one announced, one change set that has every subscription
    /// re-read at the target. Returns false when the target is the commit announced last
    /// (nothing to do). Call with the write lock held.
    ///
    /// The first batch is read in the same read transaction as the newest commit and the check
    /// of the last one announced: on PostgreSQL one transaction per catch-up, not three.
    @discardableResult
    func enqueueExternalChanges(through target: CommitPosition?) throws -> Bool {
        if hub.identity == nil {
            // Another store's write may have created this one (PostgreSQL's first write).
            hub.identity = try? backend.read { try $0.storeIdentity() }
        }
        // Commits announced with their change sets need no read when nothing else was heard.
        // Nothing heard at all needs the read: a timer's probe or a follow-up looks for what no
        // signal told of. (With a target, a write of this store waits: announcements may
        // already go past the commit it follows.)
        guard target == nil else { return try enqueueLoggedChanges(through: target) }
        let heard = enqueueHeardCommits()
        if heard.complete && heard.progressed { return true }
        // What the announcements enqueued counts as found even when the log holds nothing newer.
        return try enqueueLoggedChanges(through: nil) || heard.progressed
    }

    /// ``enqueueExternalChanges(through:)`` from the change log.
    private func enqueueLoggedChanges(through target: CommitPosition?) throws -> Bool {
        var target = target
        var checked = false
        while true {
            let announced = hub.lastPosition
            let after = hub.lastEnqueued
            let read = try backend.read { reader -> CatchUpRead? in
                let latest = try target ?? reader.lastCommit()
                if !checked {
                    if latest.isSameCommit(as: announced) { return nil }
                    let lost = try Self.lostPosition(announced, at: latest, reader)
                    if lost != false { return CatchUpRead(latest: latest, lost: lost, changeSets: []) }
                }
                guard after < latest.sequence else { return CatchUpRead(latest: latest, lost: false, changeSets: []) }
                let changeSets = try ChangeLogReader.changeSets(from: reader.changeLog(after: after, limit: Self.catchUpBatch), reader: reader)
                return CatchUpRead(latest: latest, lost: false, changeSets: changeSets)
            }
            guard let read else { return false }
            checked = true
            target = read.latest
            let sequence = read.latest.sequence
            if read.lost != false {
                // Re-read at the target: rewound (nil: trimmed past the announced commit, which
                // can no longer be checked, so plainly incomplete).
                hub.enqueue(ChangeSet(sequence: sequence, entities: [], isExternal: true, isComplete: false,
                                      commit: read.latest.commit, isRewound: read.lost ?? false))
                return true
            }
            guard after < sequence else { return true }
            // The log keeps a bounded history: when it no longer reaches back to `after`, the
            // changes in between are lost, and observers are told to re-read instead.
            let changeSets = read.changeSets
            let resumesAt = changeSets.first?.sequence ?? (sequence + 1)
            if resumesAt > after + 1 {
                let end = min(resumesAt - 1, sequence)
                let commit = end == sequence ? read.latest.commit : 0
                hub.enqueue(ChangeSet(sequence: end, entities: [], isExternal: true, isComplete: false, commit: commit))
            }
            var progressed = false
            for changeSet in changeSets where changeSet.sequence <= sequence {
                if changeSet.isSchemaChange {
                    // Another process migrated the store: announced only if this app knows the version.
                    try backend.read { try schemaGuard.check($0) }
                }
                if changeSet.entities.isEmpty && changeSet.isComplete {
                    progressed = changeSet.sequence > hub.lastEnqueued || progressed
                    hub.skip(through: changeSet.position)
                } else {
                    progressed = hub.enqueue(changeSet) != nil || progressed
                }
            }
            // Done at the target; a log that holds nothing more up to it (trimmed by retention)
            // ends the catch-up too.
            guard progressed, hub.lastEnqueued < sequence else { return true }
        }
    }

    /// Enqueues the commits the backend heard announced (``StorageBackend/takeHeardCommits()``)
    /// that follow on, one from the other, from the last one this store announced. Complete when
    /// they were everything the backend heard and each followed on: with some enqueued, nothing
    /// newer to read. An announcement at or before the last position that is not that very
    /// commit (one a read found first, or a rewound history) leaves the check to the read.
    private func enqueueHeardCommits() -> (complete: Bool, progressed: Bool) {
        let heard = backend.takeHeardCommits()
        var progressed = false
        for announcement in heard.announcements {
            let last = hub.lastPosition
            let changeSet = announcement.changeSet
            if changeSet.position.isSameCommit(as: last) { continue }
            guard changeSet.sequence > last.sequence, announcement.previous.isSameCommit(as: last) else { return (false, progressed) }
            if changeSet.entities.isEmpty {
                hub.skip(through: changeSet.position)
            } else {
                _ = hub.enqueue(changeSet)
            }
            progressed = true
        }
        return (heard.isComplete, progressed)
    }

    /// Whether the commit this store announced last (`announced`) is gone from the history
    /// that leads to `target`: true when the history was rewound, nil when the log was trimmed
    /// past it so that it can no longer be checked, false when it is there.
    private static func lostPosition(_ announced: CommitPosition, at target: CommitPosition, _ reader: any ReadTransaction) throws -> Bool? {
        guard announced.sequence > 0 else { return false }
        // nil: trimmed by retention. The catch-up would say the stretch is incomplete, unless
        // the log keeps exactly the change sets after it; then nothing can confirm that the
        // announced commit is the one the log followed on from, so it re-reads too.
        if announced.sequence > target.sequence { return true }
        if announced.sequence == target.sequence { return !announced.isSameCommit(as: target) }
        return try reader.commit(at: announced.sequence).map { !announced.isSameCommit(as: $0) }
    }
}

/// What one read of a catch-up found: the newest commit (or the target), whether the last one
/// announced is lost (see ``Store/lostPosition(_:at:_:)``), and the next batch of change sets.
private struct CatchUpRead {
    var latest: CommitPosition
    var lost: Bool?
    var changeSets: [ChangeSet]
}
