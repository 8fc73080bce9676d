import Foundation
@testable import Reservoir
import Testing

/// The memory backend's row storage (`TableRows`: a radix trie for integer ids, a hash trie for
/// the rest) against a plain `Dictionary<Value, Row>`, whose keys follow `Value`'s `==` and hash.
@Suite("TableRows")
struct TableRowsTests {
    /// A fixed-seed generator, so a failure names a seed that repeats it.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 17
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    /// Ids that meet at the edges: both ends of Int64, negatives, leaf and branch boundaries,
    /// reals equal to integers (one key with them), -0.0, reals no integer equals, texts that
    /// `String ==` would equate but the contract does not, blobs and null.
    static let edgeIDs: [Value] = [
        .integer(0), .integer(1), .integer(-1), .integer(31), .integer(32), .integer(33), .integer(1023),
        .integer(1024), .integer(1 << 35), .integer(Int64.max), .integer(Int64.min), .integer(Int64.min + 1),
        .integer(Int64.max - 1), .real(1.0), .real(-0.0), .real(32.0), .real(-1.0), .real(0.5), .real(-2.5),
        .real(9_223_372_036_854_775_808.0), .real(-9_223_372_036_854_775_808.0), .real(1e300),
        .text("1"), .text("é"), .text("e\u{301}"), .text(""), .blob(Data([1, 2])), .blob(Data()), .null,
    ]

    static func randomID(_ generator: inout Generator) -> Value {
        switch generator.below(6) {
        case 0: return edgeIDs[generator.below(edgeIDs.count)]
        case 1: return .integer(Int64(generator.below(200)) - 100)
        case 2: return .integer(Int64(generator.below(5000)))
        case 3: return .real(Double(generator.below(300)))
        case 4: return .integer(Int64(bitPattern: generator.next() << 20))
        default: return .text("t\(generator.below(50))")
        }
    }

    /// Rows of 0 to 6 columns, so leaves widen, with text values that live on the heap.
    static func randomRow(_ generator: inout Generator) -> Row {
        let width = generator.below(7)
        let columns = ["id", "name", "score", "rank", "group", "extra"].prefix(width)
        let values: [Value] = columns.indices.map { index in
            switch (index + generator.below(3)) % 3 {
            case 0: .integer(Int64(generator.below(1000)))
            case 1: .text("a longer text value than fifteen bytes \(generator.below(1000))")
            default: .real(Double(generator.below(100)) / 4)
            }
        }
        return Row(columns: Array(columns), values: values)
    }

    /// Whether `rows` holds exactly `model`'s rows, by every way it can be read.
    static func check(_ rows: TableRows, _ model: [Value: Row], seed: UInt64, step: Int) {
        #expect(rows.count == model.count, "seed \(seed) step \(step)")
        #expect(rows.isEmpty == model.isEmpty, "seed \(seed) step \(step)")
        var seen = 0
        var ids: Set<Value> = []
        rows.forEach { id, row in
            seen += 1
            ids.insert(id)
            #expect(model[id] == row, "seed \(seed) step \(step): id \(id)")
        }
        #expect(seen == model.count && ids.count == model.count, "seed \(seed) step \(step)")
        for (id, row) in model { #expect(rows[id] == row, "seed \(seed) step \(step): id \(id)") }
        #expect(rows.values.count == model.count, "seed \(seed) step \(step)")
    }

    @Test("behaves like a Dictionary under random puts, removals and look-ups", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func matchesDictionary(seed: UInt64) {
        var generator = Generator(state: seed)
        var rows = TableRows()
        var model: [Value: Row] = [:]
        for step in 0..<3000 {
            let id = Self.randomID(&generator)
            switch generator.below(10) {
            case 0..<5:
                let row = Self.randomRow(&generator)
                let old = rows.updateValue(row, forKey: id)
                #expect(old == model.updateValue(row, forKey: id), "seed \(seed) step \(step): put \(id)")
            case 5..<8:
                #expect(rows.removeValue(forKey: id) == model.removeValue(forKey: id), "seed \(seed) step \(step): remove \(id)")
            default:
                #expect(rows[id] == model[id], "seed \(seed) step \(step): get \(id)")
            }
            if step % 500 == 499 { Self.check(rows, model, seed: seed, step: step) }
        }
        Self.check(rows, model, seed: seed, step: 3000)
        // Deleting everything leaves an empty table that fills again.
        for id in Array(model.keys) {
            #expect(rows.removeValue(forKey: id) == model.removeValue(forKey: id), "seed \(seed): drain \(id)")
        }
        Self.check(rows, model, seed: seed, step: -1)
        for id in Self.edgeIDs {
            let row = Self.randomRow(&generator)
            #expect(rows.updateValue(row, forKey: id) == model.updateValue(row, forKey: id), "seed \(seed): refill \(id)")
        }
        Self.check(rows, model, seed: seed, step: -2)
    }

    @Test("a real equal to an integer is that integer's key; other reals and texts are their own")
    func keysFollowValueEquality() {
        var rows = TableRows()
        let row = Row(columns: ["id"], values: [.integer(7)])
        rows.updateValue(row, forKey: .integer(7))
        #expect(rows[.real(7.0)] == row)
        #expect(rows[.real(7.5)] == nil)
        #expect(rows[.text("7")] == nil)
        #expect(rows.updateValue(Row(), forKey: .real(7.0)) == row)
        #expect(rows.count == 1)
        rows.updateValue(row, forKey: .real(-0.0))
        #expect(rows[.integer(0)] == row)
        rows.updateValue(row, forKey: .text("é"))
        #expect(rows[.text("e\u{301}")] == nil)
        #expect(rows.count == 3)
        #expect(rows.removeValue(forKey: .integer(0)) == row)
        #expect(rows.count == 2)
    }

    @Test("a copy taken before writes never changes", arguments: [11, 12, 13, 14] as [UInt64])
    func snapshotsPersist(seed: UInt64) {
        var generator = Generator(state: seed)
        var rows = TableRows()
        var model: [Value: Row] = [:]
        var snapshots: [(TableRows, [Value: Row])] = []
        for step in 0..<2000 {
            if step % 250 == 0 { snapshots.append((rows, model)) }
            // Mostly dense integer ids, so snapshots share leaves that later writes change.
            let id: Value = generator.below(4) == 0 ? Self.randomID(&generator) : .integer(Int64(generator.below(300)))
            if generator.below(3) == 0 {
                rows.removeValue(forKey: id)
                model.removeValue(forKey: id)
            } else {
                let row = Self.randomRow(&generator)
                rows.updateValue(row, forKey: id)
                model.updateValue(row, forKey: id)
            }
        }
        for (number, (snapshot, expected)) in snapshots.enumerated() {
            Self.check(snapshot, expected, seed: seed, step: number * 250)
        }
        Self.check(rows, model, seed: seed, step: 2000)
    }

    @Test("Int64's ends and every leaf slot of a dense range, put, read, removed in order")
    func denseAndExtremeIDs() {
        for count in [0, 1, 31, 32, 33, 1024, 1025, 5000] {
            var trie = RowTrie()
            let ids = (0..<Int64(count)).map { $0 } + [Int64.min, Int64.max, -1]
            for id in ids { #expect(trie.updateValue(Row(columns: ["id"], values: [.integer(id)]), forKey: id) == nil, "count \(count) id \(id)") }
            #expect(trie.count == ids.count, "count \(count)")
            for id in ids { #expect(trie.row(id)?.value("id") == .integer(id), "count \(count) id \(id)") }
            #expect(trie.row(Int64(count)) == nil, "count \(count)")
            var visited: [Int64] = []
            trie.forEach { id, row in
                visited.append(id)
                #expect(row.value("id") == .integer(id), "count \(count) id \(id)")
            }
            #expect(visited.sorted() == ids.sorted(), "count \(count)")
            for id in ids { #expect(trie.removeValue(forKey: id)?.value("id") == .integer(id), "count \(count) id \(id)") }
            #expect(trie.isEmpty && trie.count == 0, "count \(count)")
            #expect(trie.row(0) == nil && trie.row(Int64.max) == nil, "count \(count)")
        }
    }

    @Test("a row refilled in place leaves the copies taken of it before unchanged")
    func refillKeepsCopies() {
        var trie = RowTrie()
        let first = Row(columns: ["id", "name"], values: [.integer(1), .text("a text longer than fifteen bytes")])
        let second = Row(columns: ["id", "name"], values: [.integer(2), .text("another text longer than fifteen")])
        let other = Row(columns: ["id"], values: [.integer(3)])
        trie.updateValue(first, forKey: 1)
        trie.updateValue(second, forKey: 2)
        trie.updateValue(other, forKey: 3)
        guard let leaf = trie.leaf(for: 1) else {
            Issue.record("no leaf for id 1")
            return
        }
        var lent = Row()
        #expect(leaf.fill(&lent, from: RowTrie.leafSlot(1)))
        let kept = lent
        #expect(leaf.fill(&lent, from: RowTrie.leafSlot(2)))
        #expect(kept == first)
        #expect(lent == second)
        #expect(leaf.fill(&lent, from: RowTrie.leafSlot(3)))
        #expect(lent == other)
        #expect(!leaf.fill(&lent, from: RowTrie.leafSlot(4)))
    }

    private struct Counter: Storable {
        var id: Int
        var value: Int
        var label: String
        static let schema = Schema<Counter>("counters", fields: [.field(\.value), .field(\.label)])
    }

    @Test("point reads on several threads at once, beside a writer, each get their own record")
    func concurrentPointReads() throws {
        let store = try Store.open("memory:")
        let count = 2000
        // value % 3 == id % 3 and the label names the id, whatever the writer has done.
        try store.write { transaction in
            for id in 1...count { try transaction.insert(Counter(id: id, value: id, label: "counter number \(id)")) }
        }
        let mismatches = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            if thread == 0 {
                for round in 1...20 {
                    try? store.write { transaction in
                        for id in stride(from: round, through: count, by: 20) {
                            _ = try transaction.upsert(Counter(id: id, value: id + 3 * round, label: "counter number \(id)"))
                        }
                    }
                }
                return
            }
            for pass in 0..<3 {
                for id in 1...count {
                    let wanted = (id * 7 + thread + pass) % count + 1
                    let record = try? store.get(Counter.self, id: wanted)
                    if record?.id != wanted || record.map({ $0.value % 3 != wanted % 3 || $0.label != "counter number \(wanted)" }) ?? true {
                        mismatches.withLock { $0 += 1 }
                    }
                }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
        store.close()
    }
}
