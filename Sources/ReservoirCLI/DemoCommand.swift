import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir

/// A scripted to-do session watched by a live subscription.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a scripted to-do session under a live subscription, on every backend, and compare.",
        discussion: """
            Subscribes to "open to-dos by priority", then inserts, edits, completes,
            reprioritises and deletes to-dos, rolls a transaction back and commits several
            records at once, printing each difference as it arrives and the view models kept
            in step with applyingChanges. Without --store it runs on memory:, a temporary
            SQLite file and a temporary LMDB environment, and says whether the three streams
            were identical (exiting non-zero if not).

            Example: reservoir demo --store sqlite:./demo.sqlite
            """
    )
    @Option(name: .long, help: ArgumentHelp("Run on this store only.", valueName: "URL")) var store: String?

    func run() throws {
        try reporting {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let targets = store.map { [$0] } ?? Backends.scratchConfigurations(in: scratch.directory)
            var transcripts: [(String, [String])] = []
            for configuration in targets {
                print("== \(StoreConfiguration.redact(configuration, secretsOf: [configuration]))")
                let store = try Store.open(configuration, registry: Backends.registry, migrations: Todo.migrations)
                defer { store.close() }
                let transcript = try DemoScript.run(on: store) { print($0) }
                transcripts.append((StoreConfiguration.redact(configuration, secretsOf: [configuration]), transcript))
                print("")
            }
            guard transcripts.count > 1, let (firstName, first) = transcripts.first else { return }
            for (name, transcript) in transcripts.dropFirst() where transcript != first {
                let index = zip(first, transcript).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(first.count, transcript.count)
                let mine = index < first.count ? first[index] : "(end)"
                let theirs = index < transcript.count ? transcript[index] : "(end)"
                throw CommandFailure("the streams differ: line \(index + 1) is \"\(mine)\" on \(firstName) but \"\(theirs)\" on \(name)")
            }
            print("The \(transcripts.count) streams (\(transcripts.map(\.0).joined(separator: ", "))) were identical: \(first.count) lines each.")
        }
    }
}

/// The demo's steps and what it prints; the same on every backend, so transcripts compare.
enum DemoScript {
    static let openByPriority = FetchRequest<Todo>(where: \.done == false, sortBy: [.descending(\.priority), .ascending(\.title)])

    /// A view model kept in step with the differences, made only for inserted to-dos.
    struct Row: Equatable {
        let text: String
        init(_ todo: Todo) { text = "[\(todo.priority)] \(todo.title)" }
    }

    private struct Abandoned: Error {}

    /// Runs the script, passing each line to `output` as it happens; returns all lines.
    static func run(on store: Store, output: @escaping (String) -> Void) throws -> [String] {
        let transcript = Transcript(output)
        let rows = Locked<[Row]>([])
        let subscription = store.differencesPublisher(for: openByPriority)
            .handleEvents(receiveOutput: { difference in transcript.add("  diff  " + describe(difference)) })
            .applyingChanges([Row]()) { Row($0) }
            .sink(receiveCompletion: { completion in
                if case let .failure(error) = completion { transcript.add("  failed: \(error)") }
            }, receiveValue: { newRows in
                rows.withLock { $0 = newRows }
                transcript.add("  rows  " + (newRows.isEmpty ? "(none)" : newRows.map(\.text).joined(separator: " | ")))
            })
        defer { subscription.cancel() }

        let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
        func todo(_ n: UInt8, _ title: String, _ priority: Int) -> Todo {
            Todo(id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, n)), title: title,
                 priority: priority, created: start.addingTimeInterval(Double(n)))
        }
        func step(_ title: String, _ write: (Transaction) throws -> Void) throws {
            transcript.add(title)
            do {
                try store.write(write)
            } catch is Abandoned {
                transcript.add("  (rolled back: no difference arrives)")
            }
        }
        let milk = todo(1, "Buy milk", 2)
        let taxes = todo(2, "File taxes", 3)
        let bike = todo(3, "Fix the bike", 1)
        let plants = todo(4, "Water the plants", 9)

        try step("1. insert \"Buy milk\"") { try $0.insert(milk) }
        try step("2. edit its title") { try $0.update(Todo.self, id: milk.id) { $0.title = "Buy oat milk" } }
        try step("3. insert two in one transaction") { try $0.insert(taxes); try $0.insert(bike) }
        try step("4. reprioritise \"Fix the bike\" to 5") { try $0.update(Todo.self, id: bike.id) { $0.priority = 5 } }
        try step("5. complete \"Buy oat milk\"") { try $0.update(Todo.self, id: milk.id) { $0.done = true } }
        try step("6. delete \"File taxes\", then throw: the transaction rolls back") { tx in
            try tx.delete(taxes)
            throw Abandoned()
        }
        try step("7. delete \"File taxes\"") { try $0.delete(taxes) }
        try step("8. one transaction: add \"Water the plants\" at 9, complete the bike, reopen the milk") { tx in
            try tx.insert(plants)
            try tx.update(Todo.self, id: bike.id) { $0.done = true }
            try tx.update(Todo.self, id: milk.id) { $0.done = false }
        }
        let fetched = try store.fetch(openByPriority).map(Row.init)
        transcript.add(fetched == rows.withLock({ $0 }) ? "rows kept by applyingChanges equal a fresh fetch" : "rows kept by applyingChanges DIFFER from a fresh fetch")
        return transcript.lines
    }

    static func describe(_ difference: CollectionDifference<Todo>) -> String {
        var parts: [String] = []
        for change in difference {
            switch change {
            case let .remove(offset, todo, _): parts.append("-\(offset) \(todo.title)")
            case let .insert(offset, todo, _): parts.append("+\(offset) [\(todo.priority)] \(todo.title)")
            }
        }
        return parts.isEmpty ? "(empty: nothing open yet)" : parts.joined(separator: ", ")
    }
}

/// Lines printed as they happen and kept for comparison.
final class Transcript: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    private let output: (String) -> Void
    init(_ output: @escaping (String) -> Void) { self.output = output }
    func add(_ line: String) {
        lock.lock()
        kept.append(line)
        lock.unlock()
        output(line)
    }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return kept }
}
