import Foundation
@testable import Reservoir
import Testing

private struct Post: Storable {
    var id: Int
    var channel: Int
    var text: String
    static let schema = Schema<Post>("posts", fields: [.field(\.channel, indexed: true), .field(\.text)])
}

private func row(_ id: Int, channel: Int) -> RowChange {
    RowChange(id: .integer(Int64(id)), row: Row(columns: ["id", "channel", "text"], values: [.integer(Int64(id)), .integer(Int64(channel)), .text("t")]))
}

private func route(_ predicate: RowPredicate?) throws -> SubscriptionRoute {
    SubscriptionRoute(query: try Query(entity: Post.schema.entity, predicate: predicate))
}

/// Who holds which post, as the store's shared record table would say.
private struct Held: RecordHolders {
    var byID: [Value: [UInt64]] = [:]

    func formHolders(of ids: [Value], entity: String, into tokens: inout Set<UInt64>) {
        guard entity == "posts" else { return }
        for id in ids { tokens.formUnion(byID[id] ?? []) }
    }
}

/// Channel 7's subscription (token 1) holding record 70.
private let seventy = Held(byID: [.integer(70): [1]])

@Suite("RoutingIndex")
struct RoutingIndexTests {
    /// Channel 7's and 8's keyed subscriptions (tokens 1, 2), ready.
    private func twoChannels() throws -> RoutingIndex {
        var index = RoutingIndex()
        index.add(1, route: try route(.compare(column: "channel", .equal, .integer(7))))
        index.add(2, route: try route(.compare(column: "channel", .equal, .integer(8))))
        index.setReady(1)
        index.setReady(2)
        return index
    }

    @Test("an equality or IN term, alone or under AND, keys the route; OR and NOT do not")
    func keyedTerms() throws {
        #expect(try route(.compare(column: "channel", .equal, .integer(7))).keys == [.integer(7)])
        #expect(try route(.and([.compare(column: "text", .greater, .text("a")), .isIn(column: "channel", [.integer(1), .integer(2)])])).column == "channel")
        #expect(try route(.or([.compare(column: "channel", .equal, .integer(7)), .compare(column: "channel", .equal, .integer(8))])).isKeyed == false)
        #expect(try route(.not(.compare(column: "channel", .equal, .integer(7)))).isKeyed == false)
        #expect(try route(.compare(column: "channel", .greater, .integer(7))).keys.isEmpty)
        #expect(try route(nil).isKeyed == false)
    }

    @Test("a change in one channel reaches only that channel's subscription")
    func sameChannel() throws {
        let index = try twoChannels()
        #expect(index.targets(of: ChangeSet(sequence: 1, entities: [EntityChanges(entity: "posts", inserted: [row(71, channel: 7)])])) == [1])
        #expect(index.targets(of: ChangeSet(sequence: 2, entities: [EntityChanges(entity: "posts", updated: [row(81, channel: 8)])])) == [2])
        #expect(index.targets(of: ChangeSet(sequence: 3, entities: [EntityChanges(entity: "posts", inserted: [row(91, channel: 9)])])).isEmpty)
        #expect(index.targets(of: ChangeSet(sequence: 4, entities: [EntityChanges(entity: "other", inserted: [row(1, channel: 7)])])).isEmpty)
    }

    @Test("an update moving a record from channel 7 to 8 reaches both: 8 by its new row, 7 as the holder")
    func movedRecord() throws {
        let index = try twoChannels()
        let move = ChangeSet(sequence: 1, entities: [EntityChanges(entity: "posts", updated: [row(70, channel: 8)])])
        #expect(index.targets(of: move, holders: seventy) == [1, 2])
        #expect(index.targets(of: move) == [2])
    }

    @Test("a delete carrying only the id reaches the subscription holding it, and no other")
    func deleteByID() throws {
        let index = try twoChannels()
        #expect(index.targets(of: ChangeSet(sequence: 1, entities: [EntityChanges(entity: "posts", deleted: [.integer(70)])]), holders: seventy) == [1])
        #expect(index.targets(of: ChangeSet(sequence: 2, entities: [EntityChanges(entity: "posts", deleted: [.integer(99)])]), holders: seventy).isEmpty)
    }

    @Test("an unindexable predicate, an unready keyed route and an unrouted observer get every change")
    func fallbacks() throws {
        var index = try twoChannels()
        index.add(3, route: try route(.or([.compare(column: "channel", .equal, .integer(7)), .compare(column: "text", .equal, .text("x"))])))
        index.add(4, route: try route(.compare(column: "channel", .equal, .integer(5))))  // not ready yet
        index.add(5, route: nil)
        #expect(index.targets(of: ChangeSet(sequence: 1, entities: [EntityChanges(entity: "posts", inserted: [row(91, channel: 9)])])) == [3, 4, 5])
        #expect(index.targets(of: ChangeSet(sequence: 2, entities: [EntityChanges(entity: "other", inserted: [row(1, channel: 9)])])) == [5])
        #expect(index.targets(of: ChangeSet(sequence: 3, entities: [], isComplete: false)) == [1, 2, 3, 4, 5])
    }

    @Test("holders reach a change only while their route is registered")
    func holdings() throws {
        var index = try twoChannels()
        let held = Held(byID: [.integer(70): [2]])
        let delete = ChangeSet(sequence: 1, entities: [EntityChanges(entity: "posts", deleted: [.integer(70)])])
        #expect(index.targets(of: delete, holders: held) == [2])
        // Records still listed for an observer already removed (it is closing) do not route.
        index.remove(2)
        #expect(index.targets(of: delete, holders: held).isEmpty)
    }

    // MARK: - Ranges

    private func ranged(_ token: UInt64, _ predicate: RowPredicate, into index: inout RoutingIndex) throws {
        index.add(token, route: try route(predicate))
        index.setReady(token)
    }

    private func change(_ sequence: UInt64, channel: Int, id: Int = 1000) -> ChangeSet {
        ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "posts", updated: [row(id, channel: channel)])])
    }

    @Test("range terms under AND intersect into one range on the first bounded column; an equality term wins over them")
    func rangeTerms() throws {
        let both = try route(.and([.compare(column: "channel", .greater, .integer(2)), .compare(column: "channel", .lessOrEqual, .integer(9)),
                                   .compare(column: "channel", .greaterOrEqual, .integer(4)), .compare(column: "text", .less, .text("m"))]))
        #expect(both.column == "channel")
        #expect(both.range == ValueRange(lower: .init(value: .integer(4), inclusive: true), upper: .init(value: .integer(9), inclusive: true)))
        #expect(try route(.and([.compare(column: "channel", .greater, .integer(2)), .compare(column: "text", .equal, .text("x"))])).keys == [.text("x")])
        #expect(try route(.compare(column: "channel", .greater, .null)).isKeyed == false)
        #expect(try route(.or([.compare(column: "channel", .greater, .integer(2)), .compare(column: "channel", .less, .integer(0))])).isKeyed == false)
        #expect(SubscriptionRoute(query: try Query(entity: Post.schema.entity, predicate: .compare(column: "channel", .greater, .integer(2)), offset: 1)).isKeyed == false)
    }

    @Test("a changed value reaches exactly the ranges holding it, ends inclusive or exclusive as written")
    func rangeBoundaries() throws {
        var index = RoutingIndex()
        try ranged(1, .compare(column: "channel", .greater, .integer(3)), into: &index)
        try ranged(2, .compare(column: "channel", .greaterOrEqual, .integer(3)), into: &index)
        try ranged(3, .compare(column: "channel", .less, .integer(5)), into: &index)
        try ranged(4, .compare(column: "channel", .lessOrEqual, .integer(5)), into: &index)
        try ranged(5, .and([.compare(column: "channel", .greaterOrEqual, .integer(3)), .compare(column: "channel", .less, .integer(5))]), into: &index)
        let expected: [Int: [UInt64]] = [2: [3, 4], 3: [2, 3, 4, 5], 4: [1, 2, 3, 4, 5], 5: [1, 2, 4], 6: [1, 2]]
        for (channel, tokens) in expected {
            #expect(index.targets(of: change(UInt64(channel), channel: channel)) == tokens, "channel \(channel)")
        }
    }

    @Test("a record leaving a range reaches the range's holder; null and other entities reach no range")
    func rangeHoldersAndNull() throws {
        var index = RoutingIndex()
        try ranged(1, .compare(column: "channel", .greater, .integer(3)), into: &index)
        let held = Held(byID: [.integer(50): [1]])
        #expect(index.targets(of: change(1, channel: 0, id: 50), holders: held) == [1])
        #expect(index.targets(of: change(2, channel: 0, id: 51), holders: held).isEmpty)
        let null = ChangeSet(sequence: 3, entities: [EntityChanges(entity: "posts", inserted: [RowChange(id: .integer(52), row: Row(columns: ["id", "channel"], values: [.integer(52), .null]))])])
        #expect(index.targets(of: null).isEmpty)
        index.remove(1)
        #expect(index.targets(of: change(4, channel: 9)).isEmpty)
    }

    @Test("many ranges: each value reaches exactly the ranges that contain it, as a linear check finds")
    func manyRanges() throws {
        var index = RoutingIndex()
        var ranges: [UInt64: ValueRange] = [:]
        var generator = SystemRandomNumberGenerator()
        for token in UInt64(1)...300 {
            var parts: [RowPredicate] = []
            let ops: [ComparisonOperator] = [.less, .lessOrEqual, .greater, .greaterOrEqual]
            for _ in 0..<Int.random(in: 1...2, using: &generator) {
                parts.append(.compare(column: "channel", ops.randomElement(using: &generator) ?? .less, .integer(Int64.random(in: 0...40, using: &generator))))
            }
            try ranged(token, .and(parts), into: &index)
            ranges[token] = try route(.and(parts)).range
        }
        for token in UInt64(1)...300 where token % 7 == 0 {
            index.remove(token)
            ranges[token] = nil
        }
        for channel in -1...41 {
            let expected = ranges.filter { $0.value.contains(.integer(Int64(channel))) }.keys.sorted()
            #expect(index.targets(of: change(UInt64(channel + 2), channel: channel)) == expected, "channel \(channel)")
        }
    }
}
