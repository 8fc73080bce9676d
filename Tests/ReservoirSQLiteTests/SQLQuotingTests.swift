@testable import ReservoirSQLite
import Testing

/// `SQL.identifier` and `SQL.literal` double their own mark wherever it appears, whatever
/// characters surround it, and leave everything else byte for byte.
@Suite struct SQLQuotingTests {
    @Test func aNameWithoutTheMarkIsWrappedWhole() {
        #expect(SQL.identifier("items") == "\"items\"")
        #expect(SQL.literal("items") == "'items'")
        #expect(SQL.identifier("") == "\"\"")
        #expect(SQL.identifier("é日本e\u{301}") == "\"é日本e\u{301}\"")
    }

    @Test func eachMarkIsDoubledAndTheOtherMarkIsLeftAlone() {
        #expect(SQL.identifier("a\"b") == "\"a\"\"b\"")
        #expect(SQL.identifier("\"") == "\"\"\"\"")
        #expect(SQL.identifier("\"\"x\"") == "\"\"\"\"\"x\"\"\"")
        #expect(SQL.identifier("it's") == "\"it's\"")
        #expect(SQL.literal("it's") == "'it''s'")
        #expect(SQL.literal("'é'日'") == "'''é''日'''")
        #expect(SQL.literal("say \"hi\"") == "'say \"hi\"'")
    }

    @Test func aMarkNextToACombiningCharacterIsStillDoubled() {
        // As Characters, "'" followed by U+0301 is one grapheme that is not "'": the quoting
        // must still double the quote byte, or the literal would end early.
        #expect(SQL.literal("'\u{301}") == "'''\u{301}'")
        #expect(SQL.identifier("\"\u{301}x") == "\"\"\"\u{301}x\"")
    }
}
