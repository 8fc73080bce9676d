import Foundation
import Reservoir

/// A record with searchable text, for folded predicates; `note` is not searchable.
struct Phrase: Storable {
    var id: Int
    var text: String
    var alt: String?
    var note: String = ""
    static let schema = Schema<Phrase>("conformance_phrases", fields: [
        .field(\.text, searchable: true), .field(\.alt, indexed: true, searchable: true), .field(\.note),
    ])
}

/// The same entity before its fields were declared searchable.
struct PlainPhrase: Storable {
    var id: Int
    var text: String
    var alt: String?
    var note: String = ""
    static let schema = Schema<PlainPhrase>("conformance_phrases", fields: [.field(\.text), .field(\.alt, indexed: true), .field(\.note)])
}

private let ci: TextMatchOptions = .caseInsensitive
private let di: TextMatchOptions = .diacriticInsensitive
private let both: TextMatchOptions = [.caseInsensitive, .diacriticInsensitive]

private let phrases: [Phrase] = [
    Phrase(id: 1, text: "Café au lait", alt: "Crème"),
    Phrase(id: 2, text: "CAFE NOIR"),
    Phrase(id: 3, text: "straße"),
    Phrase(id: 4, text: "STRASSE"),
    Phrase(id: 5, text: "100% pure_ness", alt: "a_b"),
    Phrase(id: 6, text: "100 percent purexness", alt: "axb"),
    Phrase(id: 7, text: "\u{C5}ngstr\u{F6}m"),                  // Å and ö as one scalar each
    Phrase(id: 8, text: "A\u{30A}ngstro\u{308}m"),               // the same, decomposed
    Phrase(id: 9, text: "ΣΟΦΟΣ"),
    Phrase(id: 10, text: "σοφός"),
    Phrase(id: 11, text: "한국어"),
    Phrase(id: 12, text: "emoji 👍🏽 ok", alt: "İstanbul"),
]

/// A folded predicate, what it must select before and after ``foldingUpdates``, by id.
private struct FoldedCase {
    var label: String
    var predicate: RecordPredicate<Phrase>
    var before: [Int]
    var after: [Int]
}

private let foldedCases: [FoldedCase] = [
    FoldedCase(label: "contains cafe [ci, di]", predicate: .contains(\.text, "cafe", options: both), before: [1, 2], after: [1]),
    FoldedCase(label: "contains café [ci]", predicate: .contains(\.text, "café", options: ci), before: [1], after: [1]),
    FoldedCase(label: "contains CAF [di]", predicate: .contains(\.text, "CAF", options: di), before: [2], after: []),
    FoldedCase(label: "contains the [ci, di]", predicate: .contains(\.text, "THE", options: both), before: [], after: [2]),
    FoldedCase(label: "== strasse [ci]", predicate: .equals(\.text, "strasse", options: ci), before: [3, 4], after: [3, 4]),
    FoldedCase(label: "hasPrefix STRAS [ci]", predicate: .hasPrefix(\.text, "STRAS", options: ci), before: [3, 4], after: [3, 4]),
    FoldedCase(label: "== straße [di] (case kept)", predicate: .equals(\.text, "straße", options: di), before: [3], after: [3]),
    FoldedCase(label: "== ångström [ci] (composed or not)", predicate: .equals(\.text, "ÅNGSTRÖM", options: ci), before: [7, 8], after: [7, 8]),
    FoldedCase(label: "hasPrefix angstr [ci, di]", predicate: .hasPrefix(\.text, "angstr", options: both), before: [7, 8], after: [7, 8]),
    FoldedCase(label: "contains % [ci]", predicate: .contains(\.text, "%", options: ci), before: [5], after: [5]),
    FoldedCase(label: "contains E_N [ci] (_ literal)", predicate: .contains(\.text, "E_N", options: ci), before: [5], after: [5, 6]),
    FoldedCase(label: "hasPrefix 100% [ci, di] (% literal)", predicate: .hasPrefix(\.text, "100%", options: both), before: [5], after: [5]),
    FoldedCase(label: "== a_b [ci] on an optional field", predicate: .equals(\.alt, "A_B", options: ci), before: [5], after: [5]),
    FoldedCase(label: "contains creme [ci, di] on an optional field", predicate: .contains(\.alt, "CREME", options: both), before: [1], after: [1]),
    FoldedCase(label: "hasPrefix istanbul [ci, di] (İ)", predicate: .hasPrefix(\.alt, "istanbul", options: both), before: [12], after: [12]),
    FoldedCase(label: "contains ΣΟΦΟΣ [ci, di] (final sigma, accent)", predicate: .contains(\.text, "ΣΟΦΟΣ", options: both), before: [9, 10], after: [9, 10]),
    FoldedCase(label: "contains σοφος [ci] (accent kept)", predicate: .contains(\.text, "σοφος", options: ci), before: [9], after: [9]),
    FoldedCase(label: "contains 국 [ci, di] (Hangul)", predicate: .contains(\.text, "국", options: both), before: [11], after: [11]),
    FoldedCase(label: "contains 👍🏽 [ci, di]", predicate: .contains(\.text, "👍🏽", options: both), before: [12], after: [12]),
    FoldedCase(label: "not contains cafe [ci, di] or == strasse [ci]",
               predicate: !.contains(\.text, "cafe", options: both) && !.equals(\.text, "strasse", options: ci),
               before: [5, 6, 7, 8, 9, 10, 11, 12], after: [2, 5, 6, 7, 8, 9, 10, 11, 12]),
]

/// Writes that change folded values: id 2 stops matching "cafe", id 6 starts matching "e_n".
private func foldingUpdates(_ store: Store) throws {
    try store.write { tx in
        try tx.update(Phrase.self, id: 2) { $0.text = "Thé noir" }
        try tx.update(Phrase.self, id: 6) { $0.text = "100 PURE_NESS" }
    }
}

extension ConformanceSuite {
    /// Folded text matching: `==`, `contains` and `hasPrefix` with ``TextMatchOptions``.
    static let foldingCases: [ConformanceCase] = [
        ConformanceCase("folded", "folded ==, contains and hasPrefix select the same records in fetches and live subscriptions") { context in
            let recorders = foldedCases.map { folded in
                let recorder = LiveRecorder<[Phrase]>()
                context.store.objectsPublisher(for: FetchRequest<Phrase>(where: folded.predicate)).subscribe(recorder)
                return recorder
            }
            try context.store.write { tx in for phrase in phrases { try tx.insert(phrase) } }
            for (folded, recorder) in zip(foldedCases, recorders) {
                let fetched = try context.store.fetch(FetchRequest<Phrase>(where: folded.predicate))
                try expectEqual(fetched.map(\.id), folded.before, "\(folded.label): fetch before the updates")
                try expectEqual(recorder.values.last?.map(\.id), folded.before, "\(folded.label): live before the updates")
            }
            try foldingUpdates(context.store)
            for (folded, recorder) in zip(foldedCases, recorders) {
                let request = FetchRequest<Phrase>(where: folded.predicate)
                try expectEqual(try context.store.fetch(request).map(\.id), folded.after, "\(folded.label): fetch after the updates")
                try expectEqual(recorder.values.last?.map(\.id), folded.after, "\(folded.label): live after the updates")
                try expectEqual(try context.store.count(request), folded.after.count, "\(folded.label): count after the updates")
                recorder.cancel()
            }
            try expectEqual(try context.store.get(Phrase.self, id: 2)?.text, "Thé noir", "records read back without their shadow columns")
        },

        ConformanceCase("folded", "a folded predicate on a field that is not searchable throws, naming the field") { context in
            try context.store.write { tx in try tx.insert(Phrase(id: 1, text: "x", note: "Café")) }
            let error = try expectError(.invalidQuery, "contains with options on note") {
                try context.store.fetch(FetchRequest<Phrase>(where: .contains(\.note, "cafe", options: both)))
            }
            try expect(error.message.contains("\"note\"") && error.message.contains("not searchable"), "message names the field: \(error.message)")
        },

        ConformanceCase("folded", "rows written before a field became searchable: a folded read throws until a write refolds them") { context in
            try context.store.write { tx in
                try tx.insert(PlainPhrase(id: 1, text: "Café"))
                try tx.insert(PlainPhrase(id: 2, text: "CAFE"))
            }
            let store = context.store   // it has not used Phrase yet, so it has not refolded its rows
            let request = FetchRequest<Phrase>(where: .contains(\.text, "cafe", options: both))
            let error = try expectError(.invalidSchema, "folded fetch over rows without shadow columns") { try store.fetch(request) }
            try expect(error.message.contains("refold"), "message names the fix: \(error.message)")
            try store.write { tx in try tx.insert(Phrase(id: 3, text: "café crème")) }
            try expectEqual(try store.fetch(request).map(\.id), [1, 2, 3], "after the first write of Phrase refolded the older rows")
            try expectEqual(try store.write { tx in try tx.refold(Phrase.self) }, 0, "refold finds nothing left to do")
            try expectEqual(try store.fetch(FetchRequest<PlainPhrase>()).map(\.text), ["Café", "CAFE", "café crème"], "records unchanged")
        },

        ConformanceCase("folded", "update and delete by a folded request refold older rows first, so they select them") { context in
            try context.store.write { tx in
                for (id, text) in [(1, "Café"), (2, "CAFE"), (3, "tea")] { try tx.insert(PlainPhrase(id: id, text: text)) }
            }
            let cafe = FetchRequest<Phrase>(where: .equals(\.text, "cafe", options: both))
            try expectEqual(try context.store.write { tx in try tx.update(matching: cafe) { $0.note = "seen" } }, 2, "updated by a folded request")
            try expectEqual(try context.store.fetch(FetchRequest<Phrase>(where: \.note == "seen")).map(\.id), [1, 2], "the rows it updated")
            try expectEqual(try context.store.write { tx in try tx.delete(matching: cafe) }, 2, "deleted by a folded request")
            try expectEqual(try context.store.fetch(FetchRequest<Phrase>()).map(\.id), [3], "what is left")
        },

        ConformanceCase("folded", "a searchable field whose shadow column name is taken is a schema error") { context in
            let error = try expectError(.invalidSchema, "column text__ci next to searchable text") {
                try context.store.write { tx in try tx.insert(Clashing(id: 1, text: "a", text__ci: "b")) }
            }
            try expect(error.message.contains("text__ci"), "message names the column: \(error.message)")
        },
    ]
}

/// A schema whose own column takes a searchable field's shadow column name.
private struct Clashing: Storable {
    var id: Int
    var text: String
    var text__ci: String
    static let schema = Schema<Clashing>("conformance_clashing", fields: [.field(\.text, searchable: true), .field(\.text__ci)])
}
