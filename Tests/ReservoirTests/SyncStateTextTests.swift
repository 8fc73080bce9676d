import Foundation
@testable import Reservoir
import Testing

/// The replica state is written as JSON by hand (every pull writes it): `JSONDecoder` must read
/// back the same state, whatever its shapes' text holds, and a state `JSONEncoder` wrote before
/// must read as it did.
@Suite struct SyncStateTextTests {
    @Test func handWrittenStateReadsBackThroughJSONDecoder() throws {
        let awkward = [
            "", "*", "notes", "notes: title == \"a \\\"quoted\\\" b\"", "back\\slash", "tab\tnew\nline\r\u{0}\u{1F}",
            "ünïcödé ✓ 🧪", "slash / and </script>", "notes: rank > 3\ntodos",
        ]
        for (index, shapes) in awkward.enumerated() {
            var state = SyncState()
            state.shapes = index == 0 ? nil : shapes
            state.token = index % 2 == 0 ? nil : HistoryToken(store: UUID(), position: CommitPosition(sequence: UInt64(index), commit: .max)).description
            state.pushed = index % 3 == 0 ? nil : "rsv1..\(index).\(index)"
            let decoded = try JSONDecoder().decode(SyncState.self, from: state.json)
            #expect(decoded == state, "\(String(decoding: state.json, as: UTF8.self))")
            let viaEncoder = try JSONDecoder().decode(SyncState.self, from: JSONEncoder().encode(state))
            #expect(viaEncoder == state)
            // Through a store: what one replica writes, another (nothing remembered) and the
            // same one (its last state remembered) read back.
            let store = try Store.open("memory:")
            defer { store.close() }
            let replica = SyncReplica(remote: "r\(index)")
            try store.write { try replica.setState(state, $0.writer) }
            #expect(try store.read { try SyncReplica(remote: "r\(index)").state($0.reader) } == state)
            #expect(try store.read { try replica.state($0.reader) } == state)
            #expect(try store.read { try $0.reader.metadata(replica.stateKey) } == state.json)
            // Bytes written by someone else are read, not the remembered state.
            var other = state
            other.token = "rsv1..\(index + 100).1"
            try store.write { try SyncReplica(remote: "r\(index)").setState(other, $0.writer) }
            #expect(try store.read { try replica.state($0.reader) } == other)
        }
    }
}
