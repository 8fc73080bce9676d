@_spi(_Unicode) import Swift
import Foundation

/// How a folded text predicate compares: letter case, diacritics, or both ignored.
///
///     FetchRequest<Message>(where: .contains(\.text, "cafe", options: [.caseInsensitive, .diacriticInsensitive]))
///
/// The field must be declared searchable (`@Searchable`, or `.field(\.text, searchable: true)`).
public struct TextMatchOptions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The raw bits.
    public let rawValue: UInt8

    /// An option set from its raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Compare after Unicode default case folding (full: "ß" matches "ss", "Σ" and "ς" match "σ").
    public static let caseInsensitive = TextMatchOptions(rawValue: 1)
    /// Compare after removing nonspacing marks from the canonical decomposition ("é" matches "e").
    public static let diacriticInsensitive = TextMatchOptions(rawValue: 2)

    /// Every non-empty option set, each of which has its own shadow column.
    static let variants: [TextMatchOptions] = [.caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive]]

    /// The suffix of the shadow column holding text folded with these options.
    var columnSuffix: String {
        switch (contains(.caseInsensitive), contains(.diacriticInsensitive)) {
        case (true, true): "__cidi"
        case (true, false): "__ci"
        case (false, true): "__di"
        case (false, false): ""
        }
    }

    /// The options as written in Swift, for messages.
    public var description: String {
        var names: [String] = []
        if contains(.caseInsensitive) { names.append(".caseInsensitive") }
        if contains(.diacriticInsensitive) { names.append(".diacriticInsensitive") }
        return "[" + names.joined(separator: ", ") + "]"
    }
}
