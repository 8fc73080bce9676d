import ArgumentParser
import Foundation
import Reservoir

@main
struct ReservoirCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reservoir",
        abstract: "Store, query and watch records with Reservoir.",
        discussion: """
            Every command takes --store URL (memory:, sqlite:PATH, lmdb:PATH); without it,
            the RESERVOIR_STORE environment variable; without that, memory:.
            """,
        subcommands: [DemoCommand.self]
    )
}

/// The --store option every command shares.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store to use: memory:, sqlite:PATH or lmdb:PATH.", valueName: "URL"))
    var store: String?

    /// The configuration string: --store, else $RESERVOIR_STORE, else `fallback`.
    func configuration(fallback: String) -> String {
        store ?? ProcessInfo.processInfo.environment["RESERVOIR_STORE"] ?? fallback
    }
}

/// Prints `error` as one line on stderr and exits non-zero.
func fail(_ error: any Error) -> ExitCode {
    FileHandle.standardError.write(Data("reservoir: \(error)\n".utf8))
    return ExitCode.failure
}
