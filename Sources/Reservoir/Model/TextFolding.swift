@_spi(_Unicode) import Swift
import Foundation

/// The one definition of folded text, which every backend compares byte-wise: the core
/// writes each searchable field's folded forms into shadow columns and folds a predicate's
/// operand the same way, so no backend needs Unicode tables of its own.
public enum TextFolding {
    /// `text` folded for `options`, in this order:
    /// 1. canonical decomposition (NFD);
    /// 2. with `.caseInsensitive`: Unicode full default case folding of each scalar
    ///    (CaseFolding.txt statuses C and F, so "ß" → "ss", "İ" → "i" + U+0307, "ς" → "σ",
    ///    Cherokee to its capitals; "ı" stays), then NFD again, since folding can
    ///    produce a decomposable scalar (canonical caseless matching, Unicode §3.13 D145);
    /// 3. with `.diacriticInsensitive`: every scalar of general category Mn (nonspacing mark)
    ///    removed; spacing (Mc) and enclosing (Me) marks stay, variation selectors (Mn) go;
    /// 4. canonical composition (NFC), so that a needle never matches half of a composed
    ///    character ("e" is not found in a case-folded "é") and Hangul stays in syllables.
    ///
    /// Empty `options` leave the text as it is. Matching is still by scalars: a needle can
    /// match the base of a base-plus-mark pair that has no composed form ("q" in "q̃").
    public static func fold(_ text: String, options: TextMatchOptions) -> String {
        guard !options.isEmpty else { return text }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.decomposedStringWithCanonicalMapping.unicodeScalars)
        if options.contains(.caseInsensitive) {
            var folded = ""
            for scalar in scalars {
                // `_caseFolded` is the standard library's full default case folding, the table
                // Swift's Regex uses for case-insensitive matching.
                folded += scalar.properties._caseFolded
            }
            scalars = folded.decomposedStringWithCanonicalMapping.unicodeScalars
        }
        if options.contains(.diacriticInsensitive) {
            scalars.removeAll { $0.properties.generalCategory == .nonspacingMark }
        }
        return String(scalars).precomposedStringWithCanonicalMapping
    }

    /// The shadow column that holds `column`'s text folded with `options`: the column name
    /// followed by `__ci`, `__di` or `__cidi`. A schema whose own columns take one of
    /// these names is refused with `.invalidSchema`.
    public static func shadowColumn(for column: String, options: TextMatchOptions) -> String {
        column + options.columnSuffix
    }

    /// The shadow value for a stored value: its folded text, or null for a value that is not text.
    static func shadowValue(_ value: Value, options: TextMatchOptions) -> Value {
        guard case let .text(text) = value else { return .null }
        return .text(fold(text, options: options))
    }
}
