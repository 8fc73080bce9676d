import Foundation

/// Commits made by other processes (or other `Store`s on the same location) reach this
/// store through the backend's persisted change log: a timer probes the backend's
/// ``StorageBackend/commitToken()``; when it moves, the log entries after the last
/// announced sequence are read, the changed rows loaded, and the change sets published
/// like local ones. Own commits are already announced, and the hub drops a sequence it
/// has seen, so nothing is announced twice.
extension Store {
    /// How many change sets one catch-up reads at most; the rest wait for the next probe.
    static let catchUpBatch = 1000

    func startPolling(every interval: Duration) {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "reservoir.store.poll"))
        let (seconds, attoseconds) = interval.components
        let nanoseconds = max(1_000_000, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds), leeway: .milliseconds(5))
        let lastToken = Locked<UInt64?>(nil)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            guard let token = try? self.backend.commitToken() else { return }
            let moved = lastToken.withLock { last -> Bool in
                defer { last = token }
                return last != token
            }
            if moved { self.pollExternalChanges() }
        }
        poller.withLock { $0 = timer }
        timer.resume()
    }

    /// Reads and announces commits this store has not announced yet.
    public func pollExternalChanges() {
        let published = try? writeLock.withLock { () -> UInt64? in
            let latest = try backend.read { try $0.lastSequence() }
            guard latest > hub.lastEnqueued else { return nil }
            try enqueueExternalChanges(through: latest)
            return hub.lastEnqueued
        }
        if let published { hub.deliver(through: published) }
    }

    /// Enqueues change sets from the log with sequences after the last enqueued, up to `sequence`.
    /// Call with the write lock held.
    func enqueueExternalChanges(through sequence: UInt64) throws {
        while hub.lastEnqueued < sequence {
            let after = hub.lastEnqueued
            let changeSets = try backend.read { reader in
                try ChangeLogReader.changeSets(
                    from: reader.changeLog(after: after, limit: Self.catchUpBatch), reader: reader)
            }
            var progressed = false
            for changeSet in changeSets where changeSet.sequence <= sequence {
                progressed = hub.enqueue(changeSet) || progressed
            }
            // A log that holds nothing more up to `sequence` (trimmed by retention) ends the catch-up.
            guard progressed else { return }
        }
    }
}

/// Turns change-log entries back into change sets, loading the current rows.
enum ChangeLogReader {
    /// One change set per sequence. An inserted or updated record whose row is gone
    /// (deleted by a later commit) is left out; that later commit's deletion removes it.
    static func changeSets(from entries: [ChangeLogEntry], reader: any ReadTransaction) throws -> [ChangeSet] {
        var result: [ChangeSet] = []
        var index = entries.startIndex
        while index < entries.endIndex {
            let sequence = entries[index].sequence
            var byEntity: [String: EntityChanges] = [:]
            while index < entries.endIndex && entries[index].sequence == sequence {
                let entry = entries[index]
                var changes = byEntity[entry.entity] ?? EntityChanges(entity: entry.entity)
                switch entry.kind {
                case .deleted:
                    changes.deleted.append(entry.id)
                case .inserted, .updated:
                    if let row = try reader.row(entry.entity, id: entry.id) {
                        let change = RowChange(id: entry.id, row: row)
                        if entry.kind == .inserted { changes.inserted.append(change) } else { changes.updated.append(change) }
                    }
                }
                byEntity[entry.entity] = changes
                index += 1
            }
            result.append(ChangeSet(sequence: sequence, entities: Array(byEntity.values), isExternal: true))
        }
        return result
    }
}
