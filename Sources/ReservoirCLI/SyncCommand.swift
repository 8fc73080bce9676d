import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Mirror a remote store's records into a local store: once, or following live.",
        discussion: """
            The local store (any backend) receives the remote's commits (this library's, and
            plain SQL's on SQLite and PostgreSQL) as ordinary local commits, so `reservoir watch`
            on it shows them live. Each pull reads what changed after the replica's saved token;
            the first one, one after --shape changed, and one the remote's history no longer
            reaches back for read the shapes whole, and say so. One line per pull.

            Only the pull half is built: local writes are not sent to the remote yet. The local
            store is opened as a to-do store (reservoir migrate), so a new one is stamped with the
            to-do schema versions.

            Example: reservoir sync --local sqlite:./replica.sqlite --remote postgres://app@db/app --shape todos --follow
            """
    )
    @Option(help: ArgumentHelp("The local store, as --store elsewhere.", valueName: "URL")) var local: String
    @Option(help: ArgumentHelp("The remote store to mirror.", valueName: "URL")) var remote: String
    @Option(help: ArgumentHelp("An entity to mirror (repeat for more; default: every entity the remote holds).", valueName: "ENTITY"))
    var shape: [String] = []
    @Flag(help: "Pull once and exit (the default).") var once = false
    @Flag(help: "Go on pulling after every remote commit, until Ctrl-C.") var follow = false

    func validate() throws {
        if once && follow { throw ValidationError("give --once or --follow, not both") }
        if let empty = shape.first(where: { $0.isEmpty }) { throw ValidationError("--shape \"\(empty)\" names no entity") }
    }

    func run() throws {
        try reporting {
            // The replica is a to-do store of this tool's schema versions: sync leaves the remote's
            // record of its versions there, so a new replica is stamped with ours on open, and the
            // todo commands find it up to date instead of migrating rows that are already new.
            let localStore = try Store.open(local, registry: Backends.registry, migrations: Todo.migrations)
            defer { localStore.close() }
            let sync = try Sync(local: localStore, remote: remote, shapes: shape.map { SyncShape(entity: $0) }, registry: Backends.registry)
            defer { sync.stop() }
            guard follow else {
                emit(try sync.pull().description)
                return
            }
            let stopped = DispatchSemaphore(value: 0)
            let printing = sync.events.sink { emit($0.description) }
            let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue(label: "reservoir.sync.sigint"))
            signal(SIGINT, SIG_IGN)
            interrupt.setEventHandler { stopped.signal() }
            interrupt.resume()
            sync.start()
            stopped.wait()
            interrupt.cancel()
            printing.cancel()
        }
    }
}
