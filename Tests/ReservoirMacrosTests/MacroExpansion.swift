import ReservoirMacroPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// Every macro of `ReservoirMacros`, as the compiler sees them.
private let macros: [String: MacroSpec] = [
    "RowMapped": MacroSpec(type: RowMappedMacro.self),
    "Storable": MacroSpec(type: StorableMacro.self, conformances: ["Storable"]),
    "Indexed": MacroSpec(type: StorableAttributeMacro.self),
    "Searchable": MacroSpec(type: StorableAttributeMacro.self),
    "Transient": MacroSpec(type: StorableAttributeMacro.self),
    "Column": MacroSpec(type: StorableAttributeMacro.self),
]

/// `assertMacroExpansion` reporting through Swift Testing.
func expand(_ source: String, to expanded: String, diagnostics: [DiagnosticSpec] = [],
            sourceLocation: SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros) { failure in
        Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
    }
}
