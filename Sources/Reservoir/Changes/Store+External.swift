import Foundation

/// Commits made by other processes (or other `Store`s on the same location) reach this
/// store through the backend's persisted change log: a timer probes the backend's
/// ``StorageBackend/commitToken()``; when it moves, the log entries after the last
/// announced sequence are read, the changed rows loaded, and the change sets published
/// like local ones. Own commits are already announced, and the hub drops a sequence it
/// has seen, so nothing is announced twice. A store that fell behind the log's retention
/// gets one incomplete change set for the lost stretch (backends number change sets
/// consecutively; one that skips numbers causes extra re-reads, never wrong results).
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
            let token: UInt64
            do {
                token = try self.backend.commitToken()
            } catch let error as ReservoirError where error.code == .gone {
                self.stop(error)
                return
            } catch {
                return  // busy or transient: the next probe tries again
            }
            let moved = lastToken.withLock { last -> Bool in
                defer { last = token }
                return last != token
            }
            if moved { self.pollExternalChanges() }
        }
        poller.withLock { $0 = timer }
        timer.resume()
    }

    /// The store's files are gone (``ReservoirError/Code/gone``): stop probing and end every
    /// live subscription with the error, instead of watching a file nobody writes any more.
    func stop(_ error: ReservoirError) {
        poller.withLock {
            $0?.cancel()
            $0 = nil
        }
        hub.fail(named(error))
    }

    /// Reads and announces commits this store has not announced yet, and returns once
    /// every change set it knows of has reached every observer (also one the poller found
    /// first and is still delivering).
    public func pollExternalChanges() {
        let published = try? writeLock.withLock { () -> UInt64 in
            let latest = try backend.read { try $0.lastSequence() }
            if latest > hub.lastEnqueued { try enqueueExternalChanges(through: latest) }
            return hub.lastEnqueued
        }
        hub.deliver(through: published ?? hub.lastEnqueued)
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
            // The log keeps a bounded history: when it no longer reaches back to `after`, the
            // changes in between are lost, and observers are told to re-read instead.
            let resumesAt = changeSets.first?.sequence ?? (sequence + 1)
            if resumesAt > after + 1 {
                hub.enqueue(ChangeSet(sequence: min(resumesAt - 1, sequence), entities: [], isExternal: true, isComplete: false))
            }
            var progressed = false
            for changeSet in changeSets where changeSet.sequence <= sequence {
                if changeSet.entities.isEmpty && changeSet.isComplete {
                    progressed = changeSet.sequence > hub.lastEnqueued || progressed
                    hub.skip(through: changeSet.sequence)
                } else {
                    progressed = hub.enqueue(changeSet) || progressed
                }
            }
            // A log that holds nothing more up to `sequence` (trimmed by retention) ends the catch-up.
            guard progressed else { return }
        }
    }
}
