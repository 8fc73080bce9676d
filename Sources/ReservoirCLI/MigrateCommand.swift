import ArgumentParser
import Foundation
import Reservoir

struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring a to-do store to the tool's newest schema version, or show what that would do.",
        discussion: """
            The to-do store's versions: 1 kept each to-do's due date as an instant; 2 renames
            "due" to "dueDay", changes it to the day as text (YYYY-MM-DD) and adds "tags", computed
            from each title's #words. Each pending version runs in one write transaction: all of
            it, or none. The todo commands migrate on open too; this command shows the plan
            (--dry-run, changing nothing) or the progress.

            Example: reservoir migrate --store sqlite:./todos.sqlite --dry-run
            """
    )
    @OptionGroup var options: StoreOptions
    @Flag(help: "Print each pending version, its steps and the records each touches; change nothing.") var dryRun = false

    func run() throws {
        try reporting {
            try requireExistingFiles()
            let store = try options.open()
            defer { store.close() }
            try requireTodoStore(store)
            let plan = try store.migrationPlan(Todo.migrations)
            if plan.isEmpty {
                print("\(options.shownConfiguration): at schema version \(plan.currentVersion), the newest this tool knows is \(Todo.migrations.latest): nothing to do")
                return
            }
            if dryRun {
                for line in Self.describe(plan, of: Todo.migrations) { print(line) }
                print("dry run: nothing changed")
                return
            }
            let bar = ProgressView(interactive: isTerminal())
            let applied = try store.migrate(Todo.migrations) { bar.show($0) }
            bar.finish()
            let versions = applied.map(String.init).joined(separator: ", ")
            print("migrated \(options.shownConfiguration) from schema version \(plan.currentVersion) to \(try store.schemaVersion()) (applied \(applied.count == 1 ? "version" : "versions") \(versions))")
        }
    }

    /// The plan, a line per pending version and per step under it.
    static func describe(_ plan: MigrationPlan, of migrations: Migrations) -> [String] {
        var lines = ["schema version \(plan.currentVersion) → \(plan.targetVersion):"]
        for version in migrations.versions where version.number > plan.currentVersion {
            let steps = plan.steps.filter { $0.version == version.number }
            lines.append("  version \(version.number): " + (steps.isEmpty ? "no steps (recorded only)" : "\(steps.count) step\(steps.count == 1 ? "" : "s")"))
            for step in steps {
                lines.append("    \(step.index). \(step.step) (\(step.records) record\(step.records == 1 ? "" : "s"))")
            }
        }
        return lines
    }

    /// A file store that does not exist would be made by opening it: refuse instead of
    /// migrating an empty new store.
    private func requireExistingFiles() throws {
        let configuration = try StoreConfiguration(options.configuration)
        guard ["sqlite", "lmdb"].contains(configuration.scheme), !configuration.location.isEmpty else { return }
        guard FileManager.default.fileExists(atPath: configuration.location) else {
            throw CommandFailure("no store at \(options.shownConfiguration): \"\(configuration.location)\" does not exist; expected an existing to-do store (reservoir todo add makes one)")
        }
    }

    /// A store never versioned that holds no to-dos is not a to-do store.
    private func requireTodoStore(_ store: Store) throws {
        guard try store.schemaVersion() == 0 else { return }
        let types = try store.read { try $0.entities().map(\.name) }
        guard !types.contains(Todo.schema.name) else { return }
        throw CommandFailure("\(options.shownConfiguration) is not a to-do store: it has no schema version and no record type \"\(Todo.schema.name)\" (\(types.isEmpty ? "no record types" : "record types: " + types.joined(separator: ", "))); expected a store made by reservoir todo")
    }
}

/// Shows a migration's progress: a bar redrawn in place on a terminal, a plain line per report
/// otherwise. Called from the migrating thread, inside the write transaction.
final class ProgressView: Sendable {
    private let interactive: Bool
    private let drawn = Locked(false)

    init(interactive: Bool) { self.interactive = interactive }

    func show(_ progress: MigrationProgress) {
        guard interactive else {
            emit(progress.description)
            return
        }
        let width = 30
        let filled = Int((progress.fractionDone * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let percent = Int((progress.fractionDone * 100).rounded(.down))
        let line = "version \(progress.version) step \(progress.step)/\(progress.stepCount) (\(progress.entity)) [\(bar)] \(percent)% \(progress.recordsDone)/\(progress.recordsTotal)"
        let done = progress.recordsDone == progress.recordsTotal
        emit("\r\u{1B}[2K" + line + (done ? "\n" : ""), newline: false)
        drawn.withLock { $0 = !done }
    }

    /// Ends a bar left mid-line.
    func finish() {
        if drawn.withLock({ $0 }) { emit("") }
    }
}
