import Foundation
import Reservoir

/// The durable history (Backends.md, "History"): tokens, catch-up after a token, and a clear
/// error for every token the store can no longer answer for exactly.
extension ConformanceSuite {
    /// `(entity, id, kind)` of each change, for comparing with what a case expects.
    static func summary(_ changeSet: HistoryChangeSet) -> [String] {
        changeSet.changes.map { "\($0.entity) \($0.id) \($0.kind)" }.sorted()
    }

    static let historyCases: [ConformanceCase] = liveHistoryCases + [
        ConformanceCase("history", "history(after:) returns each later change set once, in order, with its token and changes") { context in
            let store = context.store
            let start = try store.currentHistoryToken
            try store.write { tx in
                try tx.insert(Item(id: 1, name: "one"))
                try tx.insert(Item(id: 2, name: "two"))
            }
            try store.write { tx in try tx.update(Item(id: 1, name: "one again")) }
            try store.write { tx in
                _ = try tx.delete(Item.self, id: 2)
                try tx.insert(Item(id: 3, name: "three"))
            }
            let all = try store.history(after: start, limit: 1000)
            let table = Item.schema.name
            try expectEqual(all.map(Self.summary), [
                ["\(table) 1 inserted", "\(table) 2 inserted"],
                ["\(table) 1 updated"],
                ["\(table) 2 deleted", "\(table) 3 inserted"],
            ], "the change sets after the first token")
            try expect(all.allSatisfy { $0.origin == .library }, "every change set made by the store says so: \(all.map(\.origin))")
            try expectEqual(all.map(\.token.sequence), all.map(\.token.sequence).sorted(), "tokens in commit order")
            try expectEqual(all.last?.token, try store.currentHistoryToken, "the last change set's token is the current token")
            try expectEqual(try store.history(after: all[0].token, limit: 1000).map(Self.summary), all.dropFirst().map(Self.summary), "after the first change set's token")
            try expectEqual(try store.history(after: all[0].token, limit: 1).map(\.token), [all[1].token], "limit: 1")
            try expectEqual(try store.history(after: try store.currentHistoryToken, limit: 1000), [], "after the current token")
            _ = try expectError(.misuse, "a limit of 0") { try store.history(after: start, limit: 0) }
        },

        ConformanceCase("history", "a change set published live carries the token history(after:) gives it") { context in
            let store = context.store
            let start = try store.currentHistoryToken
            let recorder = ChangeRecorder(store)
            try store.write { tx in try tx.insert(Item(id: 1, name: "one")) }
            try store.write { tx in try tx.insert(Item(id: 2, name: "two")) }
            recorder.cancel()
            let published = recorder.changeSets.map(\.historyToken)
            try expectEqual(published, try store.history(after: start, limit: 1000).map(\.token), "the published change sets' tokens against history(after:)")
            // (A store its first write creates, PostgreSQL's, has no identity before it.)
            let current = try store.currentHistoryToken
            try expect(current.store != nil && published.allSatisfy { $0.store == current.store }, "the tokens name the store \(String(describing: current.store)): \(published)")
        },

        ConformanceCase("history", "a token's text form and Codable form read back as the same token; Comparable orders by position") { context in
            let store = context.store
            try store.write { tx in try tx.insert(Item(id: 1, name: "one")) }
            let first = try store.currentHistoryToken
            try store.write { tx in try tx.insert(Item(id: 2, name: "two")) }
            let second = try store.currentHistoryToken
            try expect(first < second, "\(first) < \(second)")
            try expectEqual(try HistoryToken(parsing: second.description), second, "the token read back from \(second.description)")
            try expectEqual(HistoryToken(second.description), second, "LosslessStringConvertible")
            let encoded = try JSONEncoder().encode([second])
            try expectEqual(try JSONDecoder().decode([HistoryToken].self, from: encoded), [second], "the token through JSON")
            try expectEqual(try store.history(after: try HistoryToken(parsing: first.description), limit: 1000).map(\.token), [second], "history after a token read from text")
        },

        ConformanceCase("history", "a snapshot reads the history and the records of the same moment") { context in
            let store = context.store
            let start = try store.currentHistoryToken
            try store.write { tx in
                for id in 1...3 { try tx.insert(Item(id: id, name: "item \(id)")) }
            }
            try store.write { tx in _ = try tx.delete(Item.self, id: 2) }
            try store.read { snapshot in
                let token = try snapshot.currentHistoryToken()
                let history = try snapshot.history(after: start)
                let records = try snapshot.fetch(Item.self)
                try expectEqual(history.last?.token, token, "the snapshot's current token is its history's last")
                var present = Set<Int64>()
                for changeSet in history {
                    for change in changeSet.changes where change.entity == Item.schema.name {
                        guard case let .integer(id) = change.id else { continue }
                        if change.kind == .deleted { present.remove(id) } else { present.insert(id) }
                    }
                }
                try expectEqual(present, Set(records.map { Int64($0.id) }), "the ids the history leaves against the records")
            }
        },

        ConformanceCase("history", "a token of another store is refused with .invalidToken naming both stores") { context in
            let other = try Store.open(try context.harness.freshConfiguration(), registry: context.harness.registry)
            defer { other.close() }
            try other.write { tx in try tx.insert(Item(id: 1, name: "elsewhere")) }
            try context.store.write { tx in try tx.insert(Item(id: 1, name: "here")) }
            let foreign = try other.currentHistoryToken
            let mine = try context.store.currentHistoryToken
            guard let foreignStore = foreign.store, let myStore = mine.store else {
                throw ConformanceFailure(message: "a store that has been written has an identity: \(foreign), \(mine)", file: #fileID, line: #line)
            }
            try expect(foreignStore != myStore, "two stores have distinct identities")
            let error = try expectError(.invalidToken, "history after another store's token") { try context.store.history(after: foreign, limit: 1000) }
            try expect(error.message.contains(foreignStore.uuidString.lowercased()) && error.message.contains(myStore.uuidString.lowercased()),
                       "the error names both stores: \(error.message)")
        },

        ConformanceCase("history", "a token ahead of the store, or naming a commit the store does not hold, is refused with .historyExpired") { context in
            let store = context.store
            try store.write { tx in try tx.insert(Item(id: 1, name: "one")) }
            try store.write { tx in try tx.insert(Item(id: 2, name: "two")) }
            let current = try store.currentHistoryToken
            let ahead = HistoryToken(store: current.store, position: CommitPosition(sequence: current.sequence + 5, commit: CommitPosition.newIdentity()))
            let error = try expectError(.historyExpired, "history after a token ahead of the store") { try store.history(after: ahead, limit: 1000) }
            try expect(error.message.contains(ahead.description) && error.message.contains("re-read"), "the error names the token and what to do: \(error.message)")
            // The commit it names was lost and its number reused.
            let replaced = HistoryToken(store: current.store, position: CommitPosition(sequence: current.sequence - 1, commit: CommitPosition.newIdentity()))
            _ = try expectError(.historyExpired, "history after a token whose commit the store does not hold") { try store.history(after: replaced, limit: 1000) }
            let replacedLast = HistoryToken(store: current.store, position: CommitPosition(sequence: current.sequence, commit: CommitPosition.newIdentity()))
            _ = try expectError(.historyExpired, "history after a token naming another commit under the newest number") { try store.history(after: replacedLast, limit: 1000) }
        },

        ConformanceCase("history", "malformed token text is a one-line .invalidToken error, never a crash") { _ in
            let valid = HistoryToken(store: UUID(), position: CommitPosition(sequence: 7, commit: 0xABC)).description
            let bad = ["", "rsv1", "rsv2.x.1.a", "rsv1...", "rsv1.not-a-uuid.1.a", "rsv1..-1.a", "rsv1..1.xyz", "rsv1..99999999999999999999999.a",
                       "rsv1..1.a.extra", valid + "\n", "rsv1..١.a", String(repeating: "rsv1.", count: 1000), "rsv1..1.\u{0}"]
            for text in bad {
                let error = try expectError(.invalidToken, "parsing \(text.debugDescription)") { try HistoryToken(parsing: text) }
                try expect(!error.message.contains("\n") && error.message.count < 400, "one short line: \(error.message)")
                try expect(HistoryToken(text) == nil, "init?(\(text.debugDescription)) is nil")
            }
            _ = try expectError(.invalidToken, "decoding a malformed token") {
                try JSONDecoder().decode([HistoryToken].self, from: Data(#"["rsv1..x.1"]"#.utf8))
            }
        },

        ConformanceCase("history", "a token is good on another store of the same location and after reopening", requires: .persistent) { context in
            let store = context.store
            try store.write { tx in try tx.insert(Item(id: 1, name: "one")) }
            let token = try store.currentHistoryToken
            try store.write { tx in try tx.insert(Item(id: 2, name: "two")) }
            let expected = try store.history(after: token, limit: 1000)
            try expectEqual(expected.count, 1, "one change set after the token")
            if store.capabilities.contains(.multiProcess) {
                let another = try context.openAnother()
                try expectEqual(try another.history(after: token, limit: 1000), expected, "the same history from another store")
                try expectEqual(try another.currentHistoryToken, try store.currentHistoryToken, "the same current token")
                another.close()
            }
            store.close()
            let reopened = try context.openAnother()
            try expectEqual(try reopened.history(after: token, limit: 1000), expected, "the same history after reopening")
            try reopened.write { tx in try tx.insert(Item(id: 3, name: "three")) }
            try expectEqual(try reopened.history(after: token, limit: 1000).count, 2, "the history goes on after reopening")
        },
    ]
}

extension ConformanceSuite {
    /// Writes one item per id, each in its own commit.
    static func writeItems(_ store: Store, _ ids: ClosedRange<Int>) throws {
        for id in ids { try store.write { tx in try tx.insert(Item(id: id, name: "item \(id)")) } }
    }

    static let liveHistoryCases: [ConformanceCase] = [
        ConformanceCase("history", "historyPublisher(after:) sends what was missed, then every later commit, each once and in order", waiting: { context in
            let store = context.store
            let start = try store.currentHistoryToken
            try writeItems(store, 1...3)
            let recorder = LiveRecorder<HistoryChangeSet>()
            store.historyPublisher(after: start).subscribe(recorder)
            try expect(await eventually { recorder.values.count >= 3 }, "the three missed change sets arrived: \(recorder.values.count)")
            try writeItems(store, 4...6)
            try expect(await eventually { recorder.values.count >= 6 }, "the three later change sets arrived: \(recorder.values.count)")
            try await Task.sleep(for: .milliseconds(50))
            try expectEqual(recorder.values.map(\.token), try store.history(after: start, limit: 1000).map(\.token), "the tokens received against history(after:)")
            try expectEqual(recorder.values.map(Self.summary), try store.history(after: start, limit: 1000).map(Self.summary), "the changes received")
            recorder.cancel()
        }),

        ConformanceCase("history", "historyPublisher(after:) sends no more than the demand, and the rest when asked", waiting: { context in
            let store = context.store
            let start = try store.currentHistoryToken
            try writeItems(store, 1...5)
            let recorder = LiveRecorder<HistoryChangeSet>(initialDemand: .max(2))
            store.historyPublisher(after: start).subscribe(recorder)
            try expect(await eventually { recorder.values.count >= 2 }, "two change sets arrived")
            try await Task.sleep(for: .milliseconds(100))
            try expectEqual(recorder.values.count, 2, "change sets received with a demand of 2")
            recorder.request(.unlimited)
            try expect(await eventually { recorder.values.count >= 5 }, "the rest arrived once asked: \(recorder.values.count)")
            recorder.cancel()
        }),

        ConformanceCase("history", "a consumer cancelled at any point that resumes from its last token sees every change set exactly once", waiting: { context in
            let store = context.store
            let start = try store.currentHistoryToken
            var seen: [HistoryToken] = []
            var token = start
            var written = 0
            for round in 1...6 {
                try writeItems(store, (written + 1)...(written + round))
                written += round
                // Take a few (1 to 3 of those waiting) and cancel, as an app quitting would.
                let wanted = min(round % 3 + 1, written - seen.count)
                let recorder = LiveRecorder<HistoryChangeSet>(initialDemand: .max(wanted))
                store.historyPublisher(after: token).subscribe(recorder)
                try expect(await eventually { recorder.values.count >= wanted }, "round \(round): \(wanted) change sets arrived")
                recorder.cancel()
                seen += recorder.values.map(\.token)
                token = seen.last ?? token
            }
            // Resume once more and take everything still missing.
            let expected = try store.history(after: start, limit: 1000).map(\.token)
            let rest = LiveRecorder<HistoryChangeSet>()
            store.historyPublisher(after: token).subscribe(rest)
            try expect(await eventually { seen.count + rest.values.count >= expected.count }, "the rest arrived")
            rest.cancel()
            try expectEqual(seen + rest.values.map(\.token), expected, "every change set exactly once, across the resumptions")
        }),

        ConformanceCase("history", "another store's commits reach historyPublisher live", requires: .multiProcess, waiting: { context in
            let store = context.store
            let other = try context.openAnother()
            try writeItems(store, 1...1)
            let start = try store.currentHistoryToken
            let recorder = LiveRecorder<HistoryChangeSet>()
            store.historyPublisher(after: start).subscribe(recorder)
            try writeItems(other, 2...4)
            try expect(await eventually { recorder.values.count >= 3 }, "the other store's three commits arrived: \(recorder.values.count)")
            try expectEqual(recorder.values.map(\.token), try other.history(after: start, limit: 1000).map(\.token), "their tokens")
            recorder.cancel()
        }),

        ConformanceCase("history", "close() ends historyPublisher with .closed, after what was committed", waiting: { context in
            let store = context.store
            let start = try store.currentHistoryToken
            let recorder = LiveRecorder<HistoryChangeSet>()
            store.historyPublisher(after: start).subscribe(recorder)
            try writeItems(store, 1...3)
            store.close()
            try expect(await eventually { recorder.completion != nil }, "the stream ended")
            guard case let .failure(error)? = recorder.completion, let reservoirError = error as? ReservoirError, reservoirError.code == .closed else {
                throw ConformanceFailure(message: "ended with \(String(describing: recorder.completion)), expected .closed", file: #fileID, line: #line)
            }
            try expectEqual(recorder.values.count, 3, "change sets received before the end")
        }),

        ConformanceCase("history", "a token older than the retained history is refused with .historyExpired naming the oldest change set held",
                        needsShortChangeLog: true) { context in
            guard let option = context.harness.shortChangeLog else { return }
            context.store.close()
            let configuration = context.configuration + (context.configuration.contains("?") ? "&" : "?") + option
            let store = try Store.open(configuration, registry: context.harness.registry)
            defer { store.close() }
            try writeItems(store, 1...1)
            let old = try store.currentHistoryToken
            try writeItems(store, 2...150)
            let error = try expectError(.historyExpired, "history after a token past retention") { try store.history(after: old, limit: 10) }
            try expect(error.message.contains(old.description) && error.message.contains("starts at change set #"),
                       "the error names the token and the oldest change set held: \(error.message)")
            _ = try expectError(.historyExpired, "history from the beginning of a trimmed history") {
                try store.history(after: HistoryToken(store: old.store, position: .start), limit: 10)
            }
        },
    ]
}
