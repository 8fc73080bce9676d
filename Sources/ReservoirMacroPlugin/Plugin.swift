import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct ReservoirMacroPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [RowMappedMacro.self, StorableMacro.self, StorableAttributeMacro.self]
}
