import Foundation
import Reservoir

/// Crash consistency of migrations: a child process opens a store of `records` notes at schema
/// version 1 with migrations to version 2 (a rename, a type change with a transform, a computed
/// new field, an index) and is SIGKILLed at a random moment of the migration; afterwards the
/// store must be at version 1 with every record as it was, or at version 2 with every record
/// migrated, never in between, and a migration run again must finish it.
///
/// Each trial starts from a copy of one seeded store (so trials are independent), or, for a
/// server backend where there is no file to copy, from a fresh store the caller names, which
/// the harness seeds (``run(records:trials:seed:freshStore:)``). The first
/// trial is not killed: it times the child's opening and its migration and counts its progress
/// reports (the child prints a line for each); later kills land at a random moment of the child's
/// start (one in five), timed from the child's `opened` line anywhere in the migration or a little
/// after it would have finished (two in five), or right after a random one of its progress reports
/// (two in five), which lands inside the migration however the machine's load changed its pace. The child
/// is the backend's fault-test executable, started with ``childArgument``:
///
///     try await MigrationCrash(child: try ChildProcess.builtExecutable("my-fault-child"), registry: myRegistry)
///         .run(scheme: "sqlite", file: "db.sqlite", records: 2000, trials: 10, seed: 1)
public struct MigrationCrash: Sendable {
    /// The child's first argument, before the store's configuration.
    public static let childArgument = "--migrate"

    public let child: URL
    public let registry: BackendRegistry

    public init(child: URL, registry: BackendRegistry) {
        self.child = child
        self.registry = registry
    }

    /// What the trials saw, for the note a test prints.
    public struct Report: Sendable, CustomStringConvertible {
        public var trials = 0
        public var killedMidMigration = 0
        /// Kills that landed after the child opened the store and before its migration
        /// returned: inside the migration's write (or its commit).
        public var killedWhileMigrating = 0
        public var foundAtVersion1 = 0
        public var foundAtVersion2 = 0
        public var migrationSeconds = 0.0
        public var description: String {
            "\(trials) trials of \(records) records, \(killedMidMigration) killed before the migration finished (\(killedWhileMigrating) of them while it ran); found afterwards at version 1: \(foundAtVersion1), at version 2: \(foundAtVersion2) (an uncut migration took \(String(format: "%.2f", migrationSeconds)) s)"
        }
        var records = 0
    }

    static let entity = EntityDescription(name: "crash_notes", fields: ["id", "title", "priority"], indexes: ["title"], integerIDs: true)

    static let migrations = Migrations {
        SchemaVersion(1, .addIndex(on: "title", in: "crash_notes"))
        SchemaVersion(2,
            .renameField("title", to: "name", in: "crash_notes"),
            .changeType(of: "priority", in: "crash_notes", from: String.self, to: Int.self) { Int($0) ?? -1 },
            .addField("slug", to: "crash_notes", indexed: true) { row in "n-" + (try row.decode("name", as: String.self)) },
            .dropIndex(on: "name", in: "crash_notes"))
    }

    static func original(_ id: Int) -> Row {
        Row(columns: ["id", "title", "priority"], values: [.integer(Int64(id)), .text("note \(id)"), .text("\(id % 7)")])
    }

    /// Runs `trials` kill-and-check rounds on copies of a store of `records` notes made at
    /// `scheme:` + a file named `file` in a fresh directory.
    @discardableResult
    public func run(scheme: String, file: String, records: Int, trials: Int, seed: UInt64) async throws -> Report {
        try await onOwnThread {
            Result {
                let root = try TemporaryDirectory("reservoir-migration-crash")
                defer { root.cleanUp() }
                let template = root.url.appendingPathComponent("template")
                try FileManager.default.createDirectory(at: template, withIntermediateDirectories: true)
                try seedStore("\(scheme):" + template.appendingPathComponent(file).path, records: records)
                return try runTrials(records: records, trials: trials, seed: seed) { trial in
                    let directory = root.url.appendingPathComponent("trial\(trial)")
                    try FileManager.default.copyItem(at: template, to: directory)
                    return ("\(scheme):" + directory.appendingPathComponent(file).path, { try? FileManager.default.removeItem(at: directory) })
                }
            }
        }.get()
    }

    /// Runs `trials` kill-and-check rounds, each on the new, empty store `freshStore(trial)` names
    /// (a schema of its own on a server, say), seeded with `records` notes at version 1 first.
    /// The child must reach the store as the caller does; dropping the stores is the caller's.
    @discardableResult
    public func run(records: Int, trials: Int, seed: UInt64, freshStore: @escaping @Sendable (Int) throws -> String) async throws -> Report {
        try await onOwnThread {
            Result {
                try runTrials(records: records, trials: trials, seed: seed) { trial in
                    let configuration = try freshStore(trial)
                    try seedStore(configuration, records: records)
                    return (configuration, {})
                }
            }
        }.get()
    }

    /// Writes the notes and migrates them to version 1.
    private func seedStore(_ configuration: String, records: Int) throws {
        let seeded = try Store.open(configuration, registry: registry)
        defer { seeded.close() }
        try seeded.write { tx in
            for id in 0..<records { _ = try tx.putRow(Self.original(id), in: Self.entity) }
        }
        try seeded.migrate(Migrations { SchemaVersion(1, .addIndex(on: "title", in: "crash_notes")) })
    }

    /// The trials; `prepare(trial)` gives the trial's seeded store and what removes it afterwards.
    private func runTrials(records: Int, trials: Int, seed: UInt64, prepare: (Int) throws -> (String, () -> Void)) throws -> Report {

        var g = SeededGenerator(seed: seed)
        var openSeconds = 0.0
        var progressLines = 0
        var report = Report()
        report.records = records
        for trial in 0..<trials {
            let (configuration, remove) = try prepare(trial)
            let started = Date()
            let process = try ChildProcess(child, [Self.childArgument, configuration])
            if trial == 0 {
                while process.isRunning && !process.output.contains("opened") { usleep(200) }
                openSeconds = Date().timeIntervalSince(started)
                while process.isRunning && !process.output.contains("migrated") { usleep(200) }
                report.migrationSeconds = Date().timeIntervalSince(started) - openSeconds
                guard process.waitUntilExit(within: 600) == 0 else {
                    throw ConformanceFailure(message: "the uncut migration failed: \(process.outputText) \(process.errorText)", file: #fileID, line: #line)
                }
                progressLines = process.output.filter { $0 == "progress" }.count
            } else {
                // One kill in five at a random moment of the child's start. Of the rest, half are timed
                // from its "opened" line by the uncut migration's duration, so they land inside the
                // migration or just after; half right after a random one of its progress reports, so
                // they land inside it however the machine's load stretched or shrank that duration.
                switch g.next() % 10 {
                case 0, 1:
                    let delay = Double(g.next() % 1000) / 1000 * openSeconds
                    while process.isRunning && Date().timeIntervalSince(started) < delay { usleep(200) }
                case 2, 3, 4, 5:
                    while process.isRunning && !process.output.contains("opened") { usleep(200) }
                    let opened = Date()
                    let delay = Double(g.next() % 1000) / 1000 * report.migrationSeconds * 1.1
                    while process.isRunning && Date().timeIntervalSince(opened) < delay { usleep(200) }
                default:
                    let wanted = 1 + Int(g.next() % UInt64(max(1, progressLines)))
                    while process.isRunning && process.output.lazy.filter({ $0 == "progress" }).count < wanted { usleep(200) }
                }
                let output = process.output
                process.kill9()
                if !output.contains("migrated") {
                    report.killedMidMigration += 1
                    if output.contains("opened") { report.killedWhileMigrating += 1 }
                }
            }
            if let failure = process.output.first(where: { $0.hasPrefix("error ") }) {
                throw ConformanceFailure(message: "trial \(trial): the child failed: \(failure)", file: #fileID, line: #line)
            }
            let version = try check(configuration, records: records, trial: trial)
            if version == 1 { report.foundAtVersion1 += 1 } else { report.foundAtVersion2 += 1 }
            report.trials += 1
            remove()
        }
        return report
    }

    /// Checks the store is wholly at version 1 or wholly at version 2, then that migrating
    /// again finishes it; returns the version found.
    private func check(_ configuration: String, records: Int, trial: Int) throws -> Int {
        let what = "trial \(trial) on \(configuration)"
        let store = try Store.open(configuration, registry: registry)
        defer { store.close() }
        let version = try store.schemaVersion()
        let rows = try store.read { snapshot -> [Row] in
            guard let stored = try snapshot.entities().first(where: { $0.name == "crash_notes" }) else { return [] }
            return try snapshot.rows(Query(entity: stored))
        }
        try expectEqual(rows.count, records, "\(what): records at version \(version)")
        switch version {
        case 1:
            for (id, row) in rows.enumerated() {
                try expect(row == Self.original(id), "\(what): at version 1, record \(id) is \(row), expected \(Self.original(id))")
            }
        case 2:
            for (id, row) in rows.enumerated() {
                let expected = Row(columns: ["id", "name", "priority", "slug"],
                                   values: [.integer(Int64(id)), .text("note \(id)"), .integer(Int64(id % 7)), .text("n-note \(id)")])
                try expect(row == expected, "\(what): at version 2, record \(id) is \(row), expected \(expected)")
            }
        default:
            throw ConformanceFailure(message: "\(what): schema version \(version), expected 1 or 2", file: #fileID, line: #line)
        }
        if version == 1 {
            try store.migrate(Self.migrations)
            try expectEqual(try store.schemaVersion(), 2, "\(what): migrating again after the kill")
        }
        return version
    }

    /// The child's whole program: opens `CommandLine.arguments[2]`, prints `opened`, migrates it,
    /// prints `migrated`, and exits 0; prints `error …` and exits 2 on any error.
    public static func childMain(registry: BackendRegistry) -> Never {
        let arguments = CommandLine.arguments
        guard arguments.count == 3 else {
            FileHandle.standardError.write(Data("usage: \(arguments.first ?? "child") \(childArgument) CONFIGURATION\n".utf8))
            exit(2)
        }
        do {
            let store = try Store.open(arguments[2], registry: registry)
            FileHandle.standardOutput.write(Data("opened\n".utf8))
            // A line per progress report, so that a kill can be timed by the migration's own pace.
            try store.migrate(migrations, progress: { _ in FileHandle.standardOutput.write(Data("progress\n".utf8)) })
            store.close()
            FileHandle.standardOutput.write(Data("migrated\n".utf8))
            exit(0)
        } catch {
            FileHandle.standardOutput.write(Data("error \(String(describing: error).replacingOccurrences(of: "\n", with: " "))\n".utf8))
            exit(2)
        }
    }
}
