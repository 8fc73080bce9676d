import Foundation
import Reservoir

/// Retention a person can predict (Backends.md, "History"): by count, by age, and per named
/// consumer, for backends that follow ``HistoryRetention`` (every built-in one).
extension ConformanceSuite {
    /// A store on the case's location with the harness's short change log and `options` added,
    /// or a skip when the backend leaves retention to itself.
    static func retentionStore(_ context: ConformanceContext, _ options: String...) throws -> Store {
        guard context.store.backend.historyRetention != nil else {
            throw ConformanceSkip(reason: "needs a backend that follows HistoryRetention (StorageBackend.historyRetention); this one trims by itself")
        }
        guard let short = context.harness.shortChangeLog else { throw ConformanceSkip(reason: "needs a harness with a shortChangeLog option") }
        return try context.openAnother(adding: ([short] + options).joined(separator: "&"))
    }

    /// The token after writing item `id`.
    static func tokenAfterWriting(_ store: Store, _ id: Int) throws -> HistoryToken {
        try writeItems(store, id...id)
        return try store.currentHistoryToken
    }

    static let historyRetentionCases: [ConformanceCase] = [
        ConformanceCase("history", "a consumer's hold keeps the history after its token past the retention count, moves with it, and ends when released",
                        needsShortChangeLog: true) { context in
            let store = try retentionStore(context)
            let held = try tokenAfterWriting(store, 1)
            try store.retainHistory(for: "indexer", from: held)
            try writeItems(store, 2...150)
            try expectEqual(try store.history(after: held, limit: 1000).count, 149, "change sets after the held token, 145 past the retention count of 5")
            let holds = try store.retainedHistory().holds
            try expectEqual(holds.map(\.consumer), ["indexer"], "the holds in force")
            try expectEqual(holds.first?.token, held, "the hold's token")
            try expect(try store.retainedHistory().oldest <= held, "the retained history reaches back to the held token")
            if store.capabilities.contains(.persistent) {
                // The hold is kept in the store: a store opened afterwards honours it.
                let reopened = try retentionStore(context)
                try expectEqual(try reopened.retainedHistory().holds.map(\.consumer), ["indexer"], "the hold seen by another Store on the location")
            }
            // Moving the hold lets go of what came before.
            let moved = try store.currentHistoryToken
            try store.retainHistory(for: "indexer", from: moved)
            try writeItems(store, 151...300)
            _ = try expectError(.historyExpired, "history after the hold's old token, once the hold moved on") { try store.history(after: held, limit: 10) }
            try expectEqual(try store.history(after: moved, limit: 1000).count, 150, "change sets after the moved hold")
            try expect(try store.releaseHistory(for: "indexer"), "releasing a hold says it had one")
            try expect(try !store.releaseHistory(for: "indexer"), "releasing again says there was none")
            try writeItems(store, 301...450)
            _ = try expectError(.historyExpired, "history after a released hold's token") { try store.history(after: moved, limit: 10) }
            try expectEqual(try store.retainedHistory().holds.map(\.consumer), [], "no holds after the release")
        },

        ConformanceCase("history", "a hold not renewed within holdage stops keeping history, so a consumer that died cannot fill the disk",
                        needsShortChangeLog: true) { context in
            let store = try retentionStore(context, "holdage=1s")
            let held = try tokenAfterWriting(store, 1)
            try store.retainHistory(for: "dead consumer", from: held)
            try writeItems(store, 2...70)
            try expectEqual(try store.history(after: held, limit: 1000).count, 69, "history kept while the hold is fresh")
            let holds = try store.retainedHistory().holds
            try expect(holds.first.flatMap(\.expires).map { abs($0.timeIntervalSince(holds[0].renewed) - 1) < 0.001 } == true,
                       "the hold expires a second after it was renewed: \(holds)")
            usleep(1_200_000)
            try writeItems(store, 71...200)
            _ = try expectError(.historyExpired, "history after an expired hold's token") { try store.history(after: held, limit: 10) }
            try expectEqual(try store.retainedHistory().holds.map(\.consumer), [], "the expired hold is gone")
        },

        ConformanceCase("history", "retentionage keeps every change set younger than it past the retention count, and lets them go once older",
                        needsShortChangeLog: true) { context in
            let young = try retentionStore(context, "retentionage=1h")
            let token = try tokenAfterWriting(young, 1)
            try writeItems(young, 2...150)
            try expectEqual(try young.history(after: token, limit: 1000).count, 149, "change sets younger than an hour, past the count of 5")
            try expectEqual(try young.retainedHistory().retention?.age, .seconds(3600), "the retention the store reports")
            young.close()
            let aging = try retentionStore(context, "retentionage=1s")
            let old = try tokenAfterWriting(aging, 151)
            usleep(1_200_000)
            try writeItems(aging, 152...300)
            _ = try expectError(.historyExpired, "history after a token older than retentionage and past the count") { try aging.history(after: old, limit: 10) }
        },

        ConformanceCase("history", "retainHistory refuses an expired token, another store's token and a bad consumer name, naming what was given",
                        needsShortChangeLog: true) { context in
            let store = try retentionStore(context)
            let old = try tokenAfterWriting(store, 1)
            try writeItems(store, 2...150)
            let expired = try expectError(.historyExpired, "holding from a token the history no longer reaches") { try store.retainHistory(for: "late", from: old) }
            try expect(expired.message.contains(old.description), "the error names the token: \(expired.message)")
            let foreign = HistoryToken(store: UUID(), position: try store.currentHistoryToken.position)
            _ = try expectError(.invalidToken, "holding from another store's token") { try store.retainHistory(for: "stranger", from: foreign) }
            let named = try expectError(.misuse, "an empty consumer name") { try store.retainHistory(for: "", from: try store.currentHistoryToken) }
            try expect(named.message.contains("consumer name"), "the error says what a name must be: \(named.message)")
            try expectEqual(try store.retainedHistory().holds.map(\.consumer), [], "nothing was held")
        },
    ]
}
