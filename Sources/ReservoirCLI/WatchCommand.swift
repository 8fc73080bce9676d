import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir

struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Show the to-do list live, including changes made by other processes.",
        discussion: """
            On a terminal the list redraws in place as it changes; otherwise (or with --json)
            one JSON line is printed per change, the first holding the initial contents.
            Changes by another reservoir process, and for sqlite: by any SQLite client
            writing the todos table, appear within about 100 ms. Ctrl-C quits.

            Example: reservoir watch --open --sort due --limit 20
            """
    )
    @OptionGroup var options: StoreOptions
    @Flag(help: "Only to-dos not done.") var open = false
    @Option(help: "Sort by priority, title, due or created.") var sort: TodoSort = .priority
    @Option(help: "Show at most this many.") var limit: Int?
    @Flag(help: "One JSON line per change, even on a terminal.") var json = false
    @Option(help: "Exit after this many changes (the initial contents count as one).") var count: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit \(limit) is not a positive count") }
        if let count, count < 1 { throw ValidationError("--count \(count) is not a positive count") }
    }

    func run() throws {
        try reporting {
            let store = try options.openTodos()
            defer { store.close() }
            let interactive = isTerminal() && !json
            let view = WatchView(configuration: options.shownConfiguration, interactive: interactive, stopAfter: count)
            let subscription = store.differencesPublisher(for: Todo.request(openOnly: open, sort: sort, limit: limit))
                .sink(receiveCompletion: view.finish, receiveValue: view.show)
            let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue(label: "reservoir.watch.sigint"))
            signal(SIGINT, SIG_IGN)
            interrupt.setEventHandler { view.stop() }
            interrupt.resume()
            let failure = view.waitUntilStopped()
            subscription.cancel()
            interrupt.cancel()
            if interactive { emit("") }
            if let failure { throw failure }
        }
    }
}

/// What `watch` shows, fed from the subscription on whichever thread delivers.
final class WatchView: @unchecked Sendable {
    // @unchecked: mutable state is guarded by `lock`.
    private let lock = NSLock()
    private let stopped = DispatchSemaphore(value: 0)
    private let configuration: String
    private let interactive: Bool
    private let stopAfter: Int?
    private var list: [Todo] = []
    private var received = 0
    private var isStopped = false
    private var failure: (any Error)?

    init(configuration: String, interactive: Bool, stopAfter: Int?) {
        self.configuration = configuration
        self.interactive = interactive
        self.stopAfter = stopAfter
    }

    func show(_ difference: CollectionDifference<Todo>) {
        lock.lock()
        defer { lock.unlock() }
        guard !isStopped else { return }
        list = list.applying(difference) ?? list
        received += 1
        if interactive {
            var screen = "\u{1B}[H\u{1B}[2J" + "reservoir watch: \(configuration), \(list.count) to-do\(list.count == 1 ? "" : "s") (Ctrl-C quits)\n\n"
            screen += list.isEmpty ? "  (nothing to show)\n" : list.map { "  " + $0.line + "\n" }.joined()
            emit(screen, newline: false)
        } else {
            let removed = difference.removals.compactMap { change -> [String: Any]? in
                guard case let .remove(offset, todo, _) = change else { return nil }
                return ["offset": offset, "id": todo.id.uuidString]
            }
            let inserted = difference.insertions.compactMap { change -> [String: Any]? in
                guard case let .insert(offset, todo, _) = change else { return nil }
                return ["offset": offset, "todo": todo.json]
            }
            let line = (try? jsonLine(["change": received, "removed": removed, "inserted": inserted, "count": list.count] as [String: Any])) ?? "{}"
            emit(line)
        }
        if let stopAfter, received >= stopAfter { stopLocked() }
    }

    func finish(_ completion: Subscribers.Completion<any Error>) {
        lock.lock()
        defer { lock.unlock() }
        if case let .failure(error) = completion { failure = error }
        stopLocked()
    }

    func stop() {
        lock.lock()
        defer { lock.unlock() }
        stopLocked()
    }

    private func stopLocked() {
        guard !isStopped else { return }
        isStopped = true
        stopped.signal()
    }

    /// Blocks until a stop (count reached, Ctrl-C, failure); returns the failure, if any.
    func waitUntilStopped() -> (any Error)? {
        stopped.wait()
        lock.lock()
        defer { lock.unlock() }
        return failure
    }
}

/// Writes a line to standard output at once (no buffering, so pipes see each change as it happens).
func emit(_ text: String, newline: Bool = true) {
    FileHandle.standardOutput.write(Data((newline ? text + "\n" : text).utf8))
}
