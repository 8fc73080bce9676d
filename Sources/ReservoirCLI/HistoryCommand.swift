import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir

struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print the store's history: every change set after a token, one a line.",
        discussion: """
            Each line starts with the change set's token; pass it to --after to continue from
            there later. Without --after, from the beginning of the history the store keeps.
            A token the store can no longer answer for (older than its history, a lost commit,
            another store's) is an error saying so. --follow goes on with every later commit,
            live, until Ctrl-C (or --count change sets).

            --retain NAME holds the history after --after's token (or the current one) for the
            consumer NAME, so retention keeps it until NAME moves on, --release NAME lets go, or
            the hold outlives the store's holdage (7 days unless given); reservoir info lists
            the holds.

            Example: reservoir history --after "$(reservoir history --token)" --follow
            """
    )
    @OptionGroup var options: StoreOptions
    @Option(help: ArgumentHelp("Print the change sets after this token (from reservoir history --token, or a line's first word).", valueName: "TOKEN"))
    var after: String?
    @Flag(help: "Print the current token and exit.") var token = false
    @Flag(help: "Go on with every later commit, live, until Ctrl-C.") var follow = false
    @Flag(help: "One JSON object a line.") var json = false
    @Option(help: "Stop after this many change sets.") var count: Int?
    @Option(help: ArgumentHelp("Hold the history after --after's token (or the current one) for this consumer, and exit.", valueName: "NAME"))
    var retain: String?
    @Option(help: ArgumentHelp("End this consumer's hold on the history, and exit.", valueName: "NAME"))
    var release: String?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count \(count) is not a positive count") }
        if token && (after != nil || follow) { throw ValidationError("--token prints the current token; it takes no --after or --follow") }
        if (retain != nil || release != nil) && (token || follow || count != nil) {
            throw ValidationError("--retain and --release change a hold and exit; they take no --token, --follow or --count")
        }
        if retain != nil && release != nil { throw ValidationError("give --retain or --release, not both") }
        if release != nil && after != nil { throw ValidationError("--release ends a hold; it takes no --after") }
    }

    func run() throws {
        try reporting {
            let store = try options.open()
            defer { store.close() }
            let current = try store.currentHistoryToken
            if token {
                emit(json ? try jsonLine(["token": current.description, "sequence": current.sequence]) : current.description)
                return
            }
            if let release {
                let had = try store.releaseHistory(for: release)
                emit(had ? "released the hold of \(release)" : "\(release) held no history")
                return
            }
            if let retain {
                let from = try after.map(HistoryToken.init(parsing:)) ?? current
                try store.retainHistory(for: retain, from: from)
                emit("holding the history after \(from) for \(retain)")
                return
            }
            var from = HistoryToken(store: current.store, position: .start)
            if let after { from = try HistoryToken(parsing: after) }
            let printer = HistoryPrinter(json: json, stopAfter: count)
            if follow {
                try printer.follow(store.historyPublisher(after: from))
            } else {
                while !printer.isDone {
                    let page = try store.history(after: from, limit: 1000)
                    guard let last = page.last else { break }
                    for changeSet in page where !printer.isDone { printer.print(changeSet) }
                    from = last.token
                }
            }
            if let failure = printer.failure { throw failure }
        }
    }
}

/// Prints change sets, one a line, from whichever thread delivers them.
final class HistoryPrinter: @unchecked Sendable {
    // @unchecked: mutable state is guarded by `lock`.
    private let lock = NSLock()
    private let json: Bool
    private let stopAfter: Int?
    private let stopped = DispatchSemaphore(value: 0)
    private var printed = 0
    private var stoppedAlready = false
    private var failed: (any Error)?

    init(json: Bool, stopAfter: Int?) {
        self.json = json
        self.stopAfter = stopAfter
    }

    var isDone: Bool { lock.withLock { stoppedAlready || stopAfter.map { printed >= $0 } ?? false } }
    var failure: (any Error)? { lock.withLock { failed } }

    func print(_ changeSet: HistoryChangeSet) {
        lock.lock()
        defer { lock.unlock() }
        guard !stoppedAlready else { return }
        if json {
            let changes = changeSet.changes.map { ["entity": $0.entity, "id": Self.json($0.id), "kind": $0.kind.rawValue] as [String: Any] }
            emit((try? jsonLine(["token": changeSet.token.description, "sequence": changeSet.token.sequence,
                                  "origin": changeSet.origin.rawValue, "changes": changes] as [String: Any])) ?? "{}")
        } else {
            let changes = changeSet.changes.map { "\($0.entity) \($0.id) \($0.kind)" }.joined(separator: ", ")
            emit("\(changeSet.token) \(changeSet.origin): " + (changes.isEmpty ? "(no net change)" : changes))
        }
        printed += 1
        if let stopAfter, printed >= stopAfter { stopLocked() }
    }

    /// Prints from `publisher` until Ctrl-C, the count, or a failure.
    func follow(_ publisher: HistoryPublisher) throws {
        let subscription = publisher.sink(
            receiveCompletion: { [self] completion in
                lock.withLock {
                    if case let .failure(error) = completion { failed = error }
                    stopLocked()
                }
            },
            receiveValue: { [self] in print($0) })
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue(label: "reservoir.history.sigint"))
        signal(SIGINT, SIG_IGN)
        interrupt.setEventHandler { [self] in lock.withLock { stopLocked() } }
        interrupt.resume()
        stopped.wait()
        subscription.cancel()
        interrupt.cancel()
    }

    private func stopLocked() {
        guard !stoppedAlready else { return }
        stoppedAlready = true
        stopped.signal()
    }

    /// An id as JSON: integers and reals as numbers, text as a string, others as their description.
    static func json(_ value: Value) -> Any {
        switch value {
        case let .integer(number): number
        case let .real(number): number
        case let .text(text): text
        default: value.description
        }
    }
}
