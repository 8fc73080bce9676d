import Foundation
import Reservoir
import Testing

/// `store.history(after:)` as an async sequence: what was missed, then live commits; a loop
/// that stops and starts again from its last token sees each change set once.
@Suite struct HistorySequenceTests {
    struct Entry: Storable {
        var id: Int
        var text: String
        static let schema = Schema<Entry>("entries", fields: [.field(\.text)])
    }

    @Test func theSequenceCatchesUpThenGoesOnLiveAndResumes() async throws {
        let store = try Store.open("memory:")
        defer { store.close() }
        let start = try await store.read { try $0.currentHistoryToken() }
        for id in 1...3 { try await store.write { try $0.insert(Entry(id: id, text: "missed")) } }
        var seen: [HistoryToken] = []
        for try await changeSet in store.history(after: start) {
            seen.append(changeSet.token)
            if seen.count == 2 { break }
        }
        // Resume from the last token: the third, then a commit made while the loop waits.
        let writer = Task {
            try await Task.sleep(for: .milliseconds(50))
            try await store.write { try $0.insert(Entry(id: 4, text: "live")) }
        }
        for try await changeSet in store.history(after: seen[1]) {
            seen.append(changeSet.token)
            if seen.count == 4 { break }
        }
        try await writer.value
        let expected = try await store.read { try $0.history(after: start) }.map(\.token)
        #expect(seen == expected && expected.count == 4, "\(seen) against \(expected)")
    }
}
