import Foundation
import Reservoir
import Testing

private struct Post: Storable {
    var id: Int
    var channel: String
    var score: Int
    var weight: Double
    var note: String?
    var rank: Int?
    var pinned: Bool
    var flagged: Bool?
    var tags: [String] = []
    var title: String { channel.uppercased() }
    static let schema = Schema<Post>("posts", fields: [
        .field(\.channel), .field(\.score), .field(\.weight), .field(\.note, searchable: true), .field(\.rank),
        .field(\.pinned), .field(\.flagged), .field(\.tags),
    ])
}

/// The row predicate a `#Predicate` translates to.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
private func translated(_ predicate: Predicate<Post>) throws -> RowPredicate {
    try RecordPredicate(predicate).expression()
}

/// The `.invalidQuery` message a `#Predicate` request is refused with, or nil when it is not.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
private func refusal(_ predicate: Predicate<Post>) -> String? {
    do {
        _ = try FetchRequest(predicate).query()
        return nil
    } catch let error as ReservoirError {
        return error.code == .invalidQuery ? error.message : "wrong code \(error.code): \(error.message)"
    } catch {
        return "not a ReservoirError: \(error)"
    }
}

@Suite("#Predicate translation")
struct PredicateTranslationTests {
    @Test("comparisons with a constant on either side, captured variables and arithmetic on constants")
    func comparisons() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let limit = 3
        let names = ["a", "b"]
        #expect(try translated(#Predicate { $0.channel == "general" }) == .compare(column: "channel", .equal, .text("general")))
        #expect(try translated(#Predicate { 2 < $0.score }) == .compare(column: "score", .greater, .integer(2)))
        #expect(try translated(#Predicate { $0.score >= limit * 2 + 1 }) == .compare(column: "score", .greaterOrEqual, .integer(7)))
        #expect(try translated(#Predicate { $0.weight <= -1.5 }) == .compare(column: "weight", .lessOrEqual, .real(-1.5)))
        #expect(try translated(#Predicate { $0.id != 4 }) == .compare(column: "id", .notEqual, .integer(4)))
        #expect(try translated(#Predicate { names.contains($0.channel) }) == .isIn(column: "channel", [.text("a"), .text("b")]))
        #expect(try translated(#Predicate { _ in limit > 2 }) == .constant(true))
    }

    @Test("&&, ||, !, Bool fields and comparisons with true and false")
    func logic() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        #expect(try translated(#Predicate { $0.pinned }) == .compare(column: "pinned", .equal, .integer(1)))
        #expect(try translated(#Predicate { !$0.pinned || $0.score > 1 && $0.channel != "x" }) == .or([
            .not(.compare(column: "pinned", .equal, .integer(1))),
            .and([.compare(column: "score", .greater, .integer(1)), .compare(column: "channel", .notEqual, .text("x"))]),
        ]))
        #expect(try translated(#Predicate { $0.pinned == true }) == .compare(column: "pinned", .equal, .integer(1)))
        #expect(try translated(#Predicate { $0.pinned == false }) == .compare(column: "pinned", .equal, .integer(0)))
        #expect(try translated(#Predicate { true != $0.pinned }) == .compare(column: "pinned", .notEqual, .integer(1)))
    }

    @Test("optionals: nil checks, ?? and optional chaining map onto null semantics")
    func optionals() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        #expect(try translated(#Predicate { $0.note == nil }) == .compare(column: "note", .equal, .null))
        #expect(try translated(#Predicate { $0.rank != nil }) == .compare(column: "rank", .notEqual, .null))
        #expect(try translated(#Predicate { $0.rank == 2 }) == .compare(column: "rank", .equal, .integer(2)))
        #expect(try translated(#Predicate { ($0.rank ?? 0) > 1 }) == .compare(column: "rank", .greater, .integer(1)))
        #expect(try translated(#Predicate { ($0.rank ?? 5) > 1 }) == .or([
            .compare(column: "rank", .greater, .integer(1)),
            .compare(column: "rank", .equal, .null),
        ]))
        #expect(try translated(#Predicate { $0.note?.contains("x") == true }) == .and([
            .not(.compare(column: "note", .equal, .null)), .contains(column: "note", "x"),
        ]))
        #expect(try translated(#Predicate { $0.note?.starts(with: "x") ?? true }) == .or([
            .and([.not(.compare(column: "note", .equal, .null)), .hasPrefix(column: "note", "x")]),
            .compare(column: "note", .equal, .null),
        ]))
        #expect(try translated(#Predicate { $0.flagged == true }) == .compare(column: "flagged", .equal, .integer(1)))
        #expect(try translated(#Predicate { $0.flagged != nil }) == .compare(column: "flagged", .notEqual, .null))
        #expect(try translated(#Predicate { $0.flagged ?? false }) == .and([
            .not(.compare(column: "flagged", .equal, .null)), .compare(column: "flagged", .equal, .integer(1)),
        ]))
    }

    @Test("text: contains and starts(with:) are the byte-wise nodes")
    func text() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        #expect(try translated(#Predicate { $0.channel.contains("ge") }) == .contains(column: "channel", "ge"))
        #expect(try translated(#Predicate { $0.channel.starts(with: "g") }) == .hasPrefix(column: "channel", "g"))
    }

    @Test("the operator form and the #Predicate form build the same tree")
    func sameTree() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let mine: RecordPredicate<Post> = \.channel == "general" && \.score >= 2 || .isIn(\.rank, [1, nil])
        let ranks: [Int?] = [1, nil]
        #expect(try translated(#Predicate { $0.channel == "general" && $0.score >= 2 || ranks.contains($0.rank) }) == mine.expression())
    }

    // MARK: - Refusals, one per kind, each naming the expression

    @Test("a computed property is refused naming it")
    func refusesComputed() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let message = try #require(refusal(#Predicate { $0.title == "X" }))
        #expect(message.contains("#Predicate<Post>"), "\(message)")
        #expect(message.contains("PredicateExpressions.KeyPath"), "\(message)")
        #expect(message.contains("Post.title") || message.contains("computed"), "\(message)")
    }

    @Test("a nested value is refused naming it")
    func refusesNested() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let message = try #require(refusal(#Predicate { $0.tags.contains("x") }))
        #expect(message.contains("\\Post.tags"), "\(message)")
        #expect(message.contains("opaque"), "\(message)")
    }

    @Test("a comparison of two fields is refused naming both")
    func refusesTwoFields() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let message = try #require(refusal(#Predicate { $0.score == $0.rank ?? 0 }))
        #expect(message.contains("PredicateExpressions.Equal"), "\(message)")
        #expect(message.contains("\\Post.score") && message.contains("\\Post.rank"), "\(message)")
        #expect(message.contains("two fields"), "\(message)")
    }

    @Test("arithmetic on a field is refused naming it")
    func refusesFieldArithmetic() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let message = try #require(refusal(#Predicate { $0.score + 1 > 3 }))
        #expect(message.contains("PredicateExpressions.Arithmetic on \\Post.score"), "\(message)")
    }

    @Test("a member of a field's value is refused naming it")
    func refusesMemberOfField() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let message = try #require(refusal(#Predicate { $0.channel.count > 3 }))
        #expect(message.contains("PredicateExpressions.KeyPath"), "\(message)")
        // A key path to a computed member (String.count) carries no name at run time.
        #expect(message.contains("\\Post.channel"), "\(message)")
        #expect(message.contains("member of a field"), "\(message)")
    }

    @Test("an expression outside the subset is refused naming it and its property")
    func refusesUnsupportedExpression() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let message = try #require(refusal(#Predicate { $0.tags.contains { $0 == "x" } }))
        #expect(message.contains("PredicateExpressions.SequenceContainsWhere on \\Post.tags"), "\(message)")
        let conditional = try #require(refusal(#Predicate { ($0.pinned ? $0.score : 0) > 1 }))
        #expect(conditional.contains("PredicateExpressions.Conditional"), "\(conditional)")
        let unwrap = try #require(refusal(#Predicate { $0.rank! > 1 }))
        #expect(unwrap.contains("PredicateExpressions.ForcedUnwrap on \\Post.rank"), "\(unwrap)")
    }

    @Test("arithmetic overflow on constants is refused, not a trap")
    func refusesOverflow() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let big = Int.max
        let message = try #require(refusal(#Predicate { $0.score > big + 1 }))
        #expect(message.contains("overflows"), "\(message)")
    }

    @Test("a constant of a type that is not stored as a value is refused naming its type")
    func refusesOpaqueConstant() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let tags = ["x"]
        let message = try #require(refusal(#Predicate { $0.tags == tags }))
        #expect(message.contains("Array<String>") || message.contains("opaque"), "\(message)")
    }

    // MARK: - SortDescriptor

    @Test("SortDescriptor on stored fields: forward is ascending, reverse descending")
    func sortDescriptors() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let query = try FetchRequest(#Predicate<Post> { $0.score > 1 }, sortBy: [SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.channel)]).query()
        #expect(query.sort == [SortTerm(column: "rank", ascending: false), SortTerm(column: "channel"), SortTerm(column: "id")])
        let lexical = try FetchRequest<Post>(sortBy: [SortDescriptor(\.note, comparator: .lexical)]).query()
        #expect(lexical.sort.first == SortTerm(column: "note"))
    }

    #if canImport(Darwin)
    // Linux's Foundation builds only the `.lexical` String comparator (its decoder refuses any
    // other), so this refusal can only be reached on Apple platforms.
    @Test("a SortDescriptor with another String comparator is refused saying why")
    func refusesStringComparator() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let request = FetchRequest<Post>(sortBy: [SortDescriptor(\.channel, comparator: .localizedStandard)])
        let error = #expect(throws: ReservoirError.self) { try request.query() }
        #expect(error?.code == .invalidQuery)
        #expect(error?.message.contains("\\Post.channel") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("UTF-8 bytes") == true, "\(error?.message ?? "")")
    }
    #endif

    @Test("a SortDescriptor on a computed property is refused naming it")
    func refusesComputedSort() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let error = #expect(throws: ReservoirError.self) { try FetchRequest<Post>(sortBy: [SortDescriptor(\.title)]).query() }
        #expect(error?.code == .invalidQuery)
    }
}
