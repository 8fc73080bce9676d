import Foundation
import Reservoir
import Testing

private struct Word: Storable {
    var id: Int
    var text: String
    var score: Double?
    var flag: Bool
    static let schema = Schema<Word>("words", fields: [.field(\.text), .field(\.score), .field(\.flag)])
}

/// Where Foundation's `Predicate.evaluate` on a record answers differently from the store
/// running the same `#Predicate` (Backends.md, "Foundation's #Predicate and SortDescriptor"):
/// the store keeps the library's semantics. Each test shows both answers.
@Suite("#Predicate: where Foundation's evaluate differs from the store")
struct PredicateDifferenceTests {
    /// The ids the store fetches for `predicate` and the ids `Predicate.evaluate` accepts, over `words`.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    private func answers(_ words: [Word], _ predicate: Predicate<Word>, sortBy: [SortDescriptor<Word>] = []) throws -> (store: [Int], foundation: [Int]) {
        let store = try Store.open("memory:", registry: BackendRegistry())
        defer { store.close() }
        try store.write { tx in for word in words { try tx.insert(word) } }
        let fetched = try store.fetch(FetchRequest(predicate, sortBy: sortBy)).map(\.id)
        let evaluated = try words.filter { try predicate.evaluate($0) }.sorted(using: sortBy).map(\.id)
        return (fetched, evaluated)
    }

    @Test("== compares text by UTF-8 bytes, not canonical equivalence")
    func textEquality() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let words = [Word(id: 1, text: "\u{e9}t\u{e9}", flag: false), Word(id: 2, text: "e\u{301}te\u{301}", flag: false)]
        let composed = "\u{e9}t\u{e9}"
        let (store, foundation) = try answers(words, #Predicate { $0.text == composed })
        #expect(store == [1])
        #expect(foundation == [1, 2])
    }

    @Test("contains and starts(with:) match bytes, not Characters")
    func textMatching() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        // Swift: the last Character of "cafe\u{301}" is "é", so "cafe" is not in it.
        let contains = try answers([Word(id: 1, text: "cafe\u{301}", flag: false), Word(id: 2, text: "cafe", flag: false)],
                                   #Predicate { $0.text.contains("cafe") })
        #expect(contains.store == [1, 2])
        #expect(contains.foundation == [2])
        // Swift: the first Character of "e\u{301}te" is "é", so it does not start with "e".
        let prefix = try answers([Word(id: 1, text: "e\u{301}te", flag: false), Word(id: 2, text: "ete", flag: false)],
                                 #Predicate { $0.text.starts(with: "e") })
        #expect(prefix.store == [1, 2])
        #expect(prefix.foundation == [2])
    }

    @Test("a NaN is stored as null, so it is nil to the store")
    func nanIsNull() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let words = [Word(id: 1, text: "a", score: .nan, flag: false), Word(id: 2, text: "b", score: nil, flag: false)]
        let (store, foundation) = try answers(words, #Predicate { $0.score == nil })
        #expect(store == [1, 2])
        #expect(foundation == [2])
    }

    @Test("a Bool field matches the stored 1; another non-zero number reads as true but does not match")
    func boolStoredAsTwo() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        let store = try Store.open("memory:", registry: BackendRegistry())
        defer { store.close() }
        // As a plain SQL writer might store it.
        try store.write { tx in _ = try tx.putRow(Row([("id", .integer(1)), ("text", .text("a")), ("score", .null), ("flag", .integer(2))]), in: Word.schema.entity) }
        let word = try #require(try store.get(Word.self, id: 1))
        let predicate = #Predicate<Word> { $0.flag }
        #expect(word.flag)
        #expect(try predicate.evaluate(word))
        #expect(try store.fetch(FetchRequest(predicate)).isEmpty)
        #expect(try store.fetch(FetchRequest<Word>(where: \.flag == true)).isEmpty, "the operator form agrees with the translation")
    }

    @Test("text sorts by UTF-8 bytes; Swift's String order ties canonically equivalent spellings")
    func textOrder() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // Foundation's Predicate
        // Composed é (C3 A9) sorts after "f"; decomposed e+U+0301 (65 CC 81) before it.
        let words = [Word(id: 1, text: "\u{e9}", flag: false), Word(id: 2, text: "f", flag: false), Word(id: 3, text: "e\u{301}", flag: false)]
        let (store, foundation) = try answers(words, #Predicate { _ in true }, sortBy: [SortDescriptor(\.text)])
        #expect(store == [3, 2, 1])
        #expect(foundation != store, "Swift's order puts the two spellings of é together: \(foundation)")
    }
}
