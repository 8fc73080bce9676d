import Foundation
import Reservoir
import Testing

/// A history token's text form: what it writes reads back as the same token, its UUID part is
/// the lowercase `uuidString`, and text that is not a token is refused whichever way it is
/// malformed (the quick reader and the careful one must agree).
@Suite struct HistoryTokenTextTests {
    @Test func writtenTokensReadBackAsThemselves() throws {
        var generator = SystemRandomNumberGenerator()
        let edges: [UInt64] = [0, 1, 9, 10, 15, 16, UInt64(UInt32.max), UInt64.max - 1, UInt64.max]
        for round in 0..<500 {
            let sequence = round < edges.count ? edges[round] : generator.next()
            let commit = round < edges.count ? edges[edges.count - 1 - round] : generator.next()
            let store: UUID? = round % 7 == 0 ? nil : UUID()
            let token = HistoryToken(store: store, position: CommitPosition(sequence: sequence, commit: commit))
            let text = token.description
            let expected = ["rsv1", store?.uuidString.lowercased() ?? "", String(sequence), String(commit, radix: 16)].joined(separator: ".")
            #expect(text == expected)
            #expect(try HistoryToken(parsing: text) == token && HistoryToken(text)?.store == store)
            // Uppercase, as `uuidString` writes it, reads too.
            let upper = ["rsv1", store?.uuidString ?? "", String(sequence), String(commit, radix: 16).uppercased()].joined(separator: ".")
            #expect(try HistoryToken(parsing: upper) == token && HistoryToken(upper)?.store == store)
        }
    }

    @Test func malformedTextIsRefusedByName() {
        let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let refused = [
            "", "rsv1", "rsv1.", "rsv1..", "rsv1...", "rsv2..1.1", "RSV1..1.1", "rsv1..1", "rsv1..1.", "rsv1...1",
            "rsv1..x.1", "rsv1..1.g", "rsv1..-1.1", "rsv1..1.1.1", "rsv1.\(uuid).1.1.", "rsv1.\(uuid)",
            "rsv1.\(uuid.dropLast()).1.1", "rsv1.\(uuid)0.1.1", "rsv1.\(uuid.replacingOccurrences(of: "-", with: "_")).1.1",
            "rsv1.0f8fad5bd9cb469fa16570867728950e.1.1", "rsv1.\(uuid.replacingOccurrences(of: "a", with: "z")).1.1",
            "rsv1..18446744073709551616.1", "rsv1..1.10000000000000000", "rsv1..١.1", "rsv1..1.1 ", " rsv1..1.1",
        ]
        for text in refused {
            #expect(HistoryToken(text) == nil, "\(text) read as a token")
            #expect(throws: ReservoirError.self, "\(text)") { try HistoryToken(parsing: text) }
        }
        #expect(HistoryToken("rsv1..18446744073709551615.ffffffffffffffff")?.position == CommitPosition(sequence: .max, commit: .max))
    }
}
