import ArgumentParser
import Foundation
import Reservoir

@main
struct ReservoirCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reservoir",
        abstract: "Store, query and watch records with Reservoir.",
        discussion: """
            Every command takes --store URL (memory:, sqlite:PATH, lmdb:PATH, postgres://USER@HOST/DB, or a registered
            scheme); without it, the RESERVOIR_STORE environment variable; without that,
            \(StoreOptions.defaultStore).

            Example: reservoir todo add "Buy milk" --priority 2 && reservoir watch --open
            """,
        subcommands: [DemoCommand.self, TodoCommand.self, WatchCommand.self, HistoryCommand.self, SyncCommand.self, CopyCommand.self, VerifyCommand.self, InfoCommand.self, MigrateCommand.self, BenchCommand.self, LatencyCommand.self]
    )
}

/// The --store option every command shares.
struct StoreOptions: ParsableArguments {
    static let defaultStore = "sqlite:./reservoir.sqlite"

    @Option(name: .long, help: ArgumentHelp("The store: memory:, sqlite:PATH, lmdb:PATH, postgres://USER@HOST/DB (default: $RESERVOIR_STORE, else \(StoreOptions.defaultStore)).", valueName: "URL"))
    var store: String?

    /// The configuration string: --store, else $RESERVOIR_STORE, else the default.
    var configuration: String {
        store ?? ProcessInfo.processInfo.environment["RESERVOIR_STORE"] ?? Self.defaultStore
    }

    /// The configuration string as the tool shows it: passwords written `***`.
    var shownConfiguration: String { StoreConfiguration.redact(configuration, secretsOf: [configuration]) }

    /// Opens the chosen store through the tool's registry.
    func open() throws -> Store {
        try Store.open(configuration, registry: Backends.registry)
    }

    /// Opens the chosen store as a to-do store: brought to the newest of ``Todo/migrations``.
    func openTodos() throws -> Store {
        try Store.open(configuration, registry: Backends.registry, migrations: Todo.migrations)
    }
}

/// A failure reported as one line on stderr, exiting non-zero.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, turning any error into one clear line on stderr and a non-zero exit.
func reporting<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        // Every store the command line or the environment names may be quoted in the error,
        // whole or in part (libpq echoes what it was given): its passwords are hidden.
        let stores = CommandLine.arguments + [ProcessInfo.processInfo.environment["RESERVOIR_STORE"] ?? ""]
        let line = StoreConfiguration.redact("reservoir: \(error)", secretsOf: stores)
        FileHandle.standardError.write(Data((line + "\n").utf8))
        throw ExitCode.failure
    }
}

/// Whether standard output (or `fd`) is a terminal.
func isTerminal(_ fd: Int32 = STDOUT_FILENO) -> Bool { isatty(fd) == 1 }
