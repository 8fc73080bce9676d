import Reservoir
import Testing

/// The one definition of folded text (``TextFolding/fold(_:options:)``), on inputs where
/// the order of its steps or the choice of tables shows.
@Suite("TextFolding")
struct TextFoldingTests {
    private static let both: TextMatchOptions = [.caseInsensitive, .diacriticInsensitive]

    /// The scalars of a string, as hex, so a failure shows composed and decomposed forms apart.
    private func scalars(_ text: String) -> [String] {
        text.unicodeScalars.map { String($0.value, radix: 16, uppercase: true) }
    }

    @Test("case folding is full default case folding: ß and ẞ fold to ss, ς and Σ to σ, µ to μ, ligatures split",
          arguments: [("straße", "strasse"), ("STRAẞE", "strasse"), ("ΣΟΦΟΣ", "σοφοσ"), ("σοφος", "σοφοσ"),
                      ("µ", "μ"), ("ﬀ", "ff"), ("ſ", "s"), ("ǅ", "ǆ"), ("K", "k")])
    func caseFolding(_ input: String, _ expected: String) {
        #expect(scalars(TextFolding.fold(input, options: .caseInsensitive)) == scalars(expected), "\(input)")
    }

    @Test("dotted and dotless i: İ folds to i + U+0307 (kept case-only, removed with diacritics); ı stays ı")
    func turkishI() {
        #expect(scalars(TextFolding.fold("İ", options: .caseInsensitive)) == ["69", "307"])
        #expect(scalars(TextFolding.fold("İ", options: Self.both)) == ["69"])
        #expect(scalars(TextFolding.fold("ı", options: Self.both)) == ["131"])
        #expect(TextFolding.fold("I", options: .caseInsensitive) == "i")
    }

    @Test("Å as one scalar and as A + ring fold to the same bytes under every option set")
    func composedAndDecomposed() {
        for options: TextMatchOptions in [.caseInsensitive, .diacriticInsensitive, Self.both] {
            let one = TextFolding.fold("\u{C5}ngstr\u{F6}m", options: options)
            let two = TextFolding.fold("A\u{30A}ngstro\u{308}m", options: options)
            #expect(Array(one.utf8) == Array(two.utf8), "\(options)")
        }
        #expect(scalars(TextFolding.fold("A\u{30A}", options: .caseInsensitive)) == ["E5"], "recomposed (NFC)")
        #expect(TextFolding.fold("Å", options: .diacriticInsensitive) == "A", "case kept")
        #expect(TextFolding.fold("Å", options: Self.both) == "a")
    }

    @Test("the output is NFC, so a bare letter is not found inside a case-folded accented one")
    func recomposed() {
        let folded = TextFolding.fold("CAFÉ", options: .caseInsensitive)
        #expect(scalars(folded) == ["63", "61", "66", "E9"])
        #expect(!folded.utf8.elementsEqual("cafe".utf8))
    }

    @Test("Greek iota subscript folds to iota before marks go, as Unicode's canonical caseless match has it")
    func iotaSubscript() {
        #expect(TextFolding.fold("ᾳ", options: Self.both) == TextFolding.fold("ΑΙ", options: Self.both))
        #expect(scalars(TextFolding.fold("ᾳ", options: .diacriticInsensitive)) == ["3B1"])
    }

    @Test("Hangul stays in syllables; Cherokee folds to its capitals; emoji, NUL and empty text pass through")
    func passThrough() {
        #expect(scalars(TextFolding.fold("한국어", options: Self.both)) == scalars("한국어"))
        #expect(scalars(TextFolding.fold("\u{AB70}", options: .caseInsensitive)) == ["13A0"])
        #expect(TextFolding.fold("👍🏽 ok", options: Self.both) == "👍🏽 ok")
        #expect(TextFolding.fold("a\u{0}B", options: Self.both) == "a\u{0}b")
        #expect(TextFolding.fold("", options: Self.both) == "")
        #expect(TextFolding.fold("Café", options: []) == "Café", "empty options leave text alone")
    }

    @Test("folding is idempotent on a mixed sample")
    func idempotent() {
        let sample = "Straße ΣΟΦΟΣ İstanbul A\u{30A}ngström ᾼ ﬃ 한국 👍🏽 q\u{303} \u{0}"
        for options: TextMatchOptions in [.caseInsensitive, .diacriticInsensitive, Self.both] {
            let once = TextFolding.fold(sample, options: options)
            #expect(Array(TextFolding.fold(once, options: options).utf8) == Array(once.utf8), "\(options)")
        }
    }

    @Test("shadow column names")
    func shadowColumns() {
        #expect(TextFolding.shadowColumn(for: "title", options: .caseInsensitive) == "title__ci")
        #expect(TextFolding.shadowColumn(for: "title", options: .diacriticInsensitive) == "title__di")
        #expect(TextFolding.shadowColumn(for: "title", options: Self.both) == "title__cidi")
    }

    @Test("RowPredicate.folded names the shadow column and folds the needle, for rows without Swift types")
    func rowPredicate() {
        let predicate = RowPredicate.folded("title", "CAFÉ", options: [.caseInsensitive, .diacriticInsensitive]) { .contains(column: $0, $1) }
        #expect(predicate == .contains(column: "title__cidi", "cafe"))
    }

    @Test("only String and String? fields can be searchable: another type is a schema error naming the field")
    func searchableType() throws {
        let error = #expect(throws: ReservoirError.self) { try Counted.schema.validate() }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains("\"count\" is searchable but holds Int") == true, "\(error?.message ?? "")")
        #expect(throws: Never.self) { try Titled.schema.validate() }
    }
}

private struct Counted: Storable {
    var id: Int
    var count: Int
    static let schema = Schema<Counted>("counted", fields: [.field(\.count, searchable: true)])
}

private struct Titled: Storable {
    var id: Int
    var title: String?
    static let schema = Schema<Titled>("titled", fields: [.field(\.title, searchable: true)])
}
