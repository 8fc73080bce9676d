import Foundation

/// Consumers' holds on the history, and the trimming that honours them (``HistoryRetention``).
extension Store {
    /// Keeps every change set after `token` until `consumer` moves its hold on, releases it
    /// (``releaseHistory(for:)``), or leaves it unrenewed for the store's hold age
    /// (`holdage=`, 7 days unless given), whichever comes first: a bounded replication slot.
    /// A consumer calls this with its newest token as it goes, which both moves and renews the
    /// hold. Holds are kept in the store, so they outlive the process and, on a multi-process
    /// backend, are honoured by every process that trims.
    ///
    /// Throws `.historyExpired` when the history no longer reaches back to `token` (holding it
    /// would promise what the store no longer has), `.invalidToken` for another store's token,
    /// and `.misuse` for an empty or overlong consumer name, or on a backend that does not
    /// follow ``HistoryRetention``.
    public func retainHistory(for consumer: String, from token: HistoryToken) throws {
        try Self.checkConsumerName(consumer)
        try updateHolds { holds, reader in
            _ = try Snapshot.check(token, reader)
            holds.removeAll { $0.consumer == consumer }
            holds.append(HistoryHoldRecord(consumer: consumer, sequence: token.sequence, commit: token.position.commit,
                                           renewed: Date().timeIntervalSince1970))
        }
    }

    /// Ends `consumer`'s hold; returns whether it had one.
    @discardableResult
    public func releaseHistory(for consumer: String) throws -> Bool {
        var found = false
        try updateHolds { holds, _ in
            found = holds.contains { $0.consumer == consumer }
            holds.removeAll { $0.consumer == consumer }
        }
        return found
    }

    /// What the store's history holds now: how far back it reaches, its newest token, the rule
    /// it keeps by, and the consumers' holds (expired ones left out).
    public func retainedHistory() throws -> RetainedHistory {
        let retention = backend.historyRetention
        return try read { snapshot in
            let reader = snapshot.reader
            let store = try reader.storeIdentity()
            let last = try reader.lastCommit()
            var oldest = HistoryToken(store: store, position: .start)
            if last.sequence > 0, let first = try reader.changeLog(after: 0, limit: 1).first?.sequence, first > 1,
               let position = try reader.commit(at: first) {
                oldest = HistoryToken(store: store, position: position)
            }
            let now = Date()
            let holds = try HistoryHoldRecord.read(reader)
                .filter { hold in retention.map { hold.isLive(at: now, holdAge: $0.holdAge) } ?? true }
                .map { hold in
                    let renewed = Date(timeIntervalSince1970: hold.renewed)
                    return HistoryHold(consumer: hold.consumer,
                                       token: HistoryToken(store: store, position: CommitPosition(sequence: hold.sequence, commit: hold.commit)),
                                       renewed: renewed,
                                       expires: retention.map { renewed.addingTimeInterval(HistoryRetention.seconds($0.holdAge)) })
                }
            return RetainedHistory(oldest: oldest, newest: HistoryToken(store: store, position: last), retention: retention,
                                   holds: holds.sorted { $0.consumer < $1.consumer })
        }
    }

    static func checkConsumerName(_ consumer: String) throws {
        guard !consumer.isEmpty, consumer.count <= 200, !consumer.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            let shown = consumer.count > 40 ? String(consumer.prefix(40)) + "…" : consumer
            throw ReservoirError(.misuse, "\"\(shown)\" is not a consumer name; expected 1 to 200 characters without control characters, such as \"indexer\"")
        }
    }

    /// Runs `change` on the store's holds in a write transaction of its own (which records no
    /// change set), then writes them back.
    private func updateHolds(_ change: (inout [HistoryHoldRecord], any ReadTransaction) throws -> Void) throws {
        try checkOpen()
        guard backend.historyRetention != nil else {
            throw named(ReservoirError(.misuse, "this backend does not follow HistoryRetention (StorageBackend.historyRetention is nil), so it cannot hold history for a consumer"))
        }
        do {
            try writeLock.withWriter {
                try backend.write { writer in
                    var holds = try HistoryHoldRecord.read(writer)
                    try change(&holds, writer)
                    try HistoryHoldRecord.write(holds, writer)
                }
            }
        } catch let error as ReservoirError {
            throw named(error)
        }
    }

    /// After this library recorded change set `sequence` in `writer`: keeps the age clock and,
    /// every ``HistoryRetention/trimInterval`` change sets, trims what no rule keeps any more.
    func keepHistory(after sequence: UInt64, _ retention: HistoryRetention, _ writer: any WriteTransaction) throws {
        guard !retention.keepsAll else { return }
        let now = Date()
        var clock: HistoryClock?
        if let age = retention.age {
            let step = HistoryRetention.clockStep(age)
            let time = now.timeIntervalSince1970
            let known = historyClock.withLock { state in
                defer { state.previous = HistoryClock.Mark(sequence: sequence, time: time) }
                return state
            }
            if known.newest.map({ time - $0 >= step }) ?? true {
                var read = try HistoryClock.read(writer)
                if read.marks.last.map({ time - $0.time >= step }) ?? true {
                    // This store's previous commit closes the window before this one: without
                    // it, everything committed since the last mark would count as young.
                    if let previous = known.previous, previous.sequence > (read.marks.last?.sequence ?? 0), previous.sequence < sequence {
                        read.marks.append(previous)
                    }
                    read.marks.append(HistoryClock.Mark(sequence: sequence, time: time))
                    try read.write(writer)
                }
                historyClock.withLock { $0.newest = read.marks.last?.time }
                clock = read
            }
        }
        guard sequence % HistoryRetention.trimInterval == 0 else { return }
        let holds = try HistoryHoldRecord.read(writer)
        let live = holds.filter { $0.isLive(at: now, holdAge: retention.holdAge) }
        if live.count != holds.count { try HistoryHoldRecord.write(live, writer) }
        var marks = retention.age == nil ? HistoryClock() : try clock ?? HistoryClock.read(writer)
        let cutoff = retention.droppable(newest: sequence, now: now, clock: marks, holds: live)
        guard cutoff > 0 else { return }
        try writer.trimChangeLog(through: cutoff)
        // Marks of dropped change sets tell nothing any more.
        let kept = marks.marks.count
        marks.marks.removeAll { $0.sequence <= cutoff }
        if marks.marks.count != kept { try marks.write(writer) }
    }
}

/// A consumer's hold on the history (``Store/retainHistory(for:from:)``).
public struct HistoryHold: Sendable, Hashable {
    /// The name the consumer holds under.
    public let consumer: String
    /// The history after this token is kept for it.
    public let token: HistoryToken
    /// When it was made or last moved.
    public let renewed: Date
    /// When it stops keeping history unless renewed (nil on a backend without a hold age).
    public let expires: Date?
}

/// What a store's history holds now (``Store/retainedHistory()``).
public struct RetainedHistory: Sendable {
    /// The oldest token the store still answers ``Store/history(after:limit:)`` for.
    public let oldest: HistoryToken
    /// The newest change set's token.
    public let newest: HistoryToken
    /// The rule the store keeps history by (nil: the backend's own).
    public let retention: HistoryRetention?
    /// The consumers' holds in force, by name.
    public let holds: [HistoryHold]

    /// Change sets the history holds: from ``oldest`` (exclusive) to ``newest``.
    public var count: UInt64 { newest.sequence - oldest.sequence }
}
