@testable import Reservoir
import Testing

@Suite("EntryIndex")
struct EntryIndexTests {
    private func entry(_ id: Value) -> LiveEntry<Int> {
        LiveEntry(id: id, row: Row(columns: ["id"], values: [id]), record: 0)
    }

    @Test("sets, replacements and removals agree with a dictionary through growth and shrinking")
    func agreesWithDictionary() {
        var index = EntryIndex()
        var expected: [Value: LiveEntry<Int>] = [:]
        var generator = SystemRandomNumberGenerator()
        let ids: [Value] = (0..<300).map { $0 % 3 == 0 ? .text("id \($0)") : .integer(Int64($0)) }
        for step in 0..<20_000 {
            let id = ids.randomElement(using: &generator) ?? .null
            // Mostly inserts early, mostly removals late, so the index grows and shrinks.
            if Int.random(in: 0..<20_000, using: &generator) > step {
                let made = entry(id)
                #expect(index.set(made) === expected[id])
                expected[id] = made
            } else {
                index.remove(id)
                expected[id] = nil
            }
            #expect(index.count == expected.count)
        }
        for id in ids + [.integer(999), .text("absent")] {
            #expect(index.find(id) === expected[id], "id \(id)")
        }
        for id in ids { index.remove(id) }
        #expect(index.count == 0 && index.find(ids[0]) == nil)
    }
}
