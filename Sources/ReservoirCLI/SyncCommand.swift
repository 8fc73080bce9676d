import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Keep a local store and a remote store in step, both ways: once, or following live.",
        discussion: """
            Local writes (made online or offline, by any process, plain SQL included) are sent
            to the remote, each applied there once; the remote's commits arrive in the local
            store as ordinary local commits, so `reservoir watch` on it shows them live.
            Conflicts: last writer wins field by field in the server's order, and a delete wins
            over a concurrent update; a change the server does not take is named, and the local
            record returns to the server's state. The first sync uploads the local records and
            reads the remote's shapes whole, as does one after --shape changed or once the
            remote's history no longer reaches back. One line per push and per pull.
            The local store is opened as a to-do store (reservoir migrate), so a new one is
            stamped with the to-do schema versions.

            Example: reservoir sync --local sqlite:./replica.sqlite --remote postgres://app@db/app --shape todos --follow
            """
    )
    @Option(help: ArgumentHelp("The local store, as --store elsewhere.", valueName: "URL")) var local: String
    @Option(help: ArgumentHelp("The remote store to mirror.", valueName: "URL")) var remote: String
    @Option(help: ArgumentHelp("An entity to mirror (repeat for more; default: every entity the remote holds).", valueName: "ENTITY"))
    var shape: [String] = []
    @Flag(help: "Push and pull once and exit (the default).") var once = false
    @Flag(help: "Go on after every commit of either store, until Ctrl-C.") var follow = false

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
            // The remote too, so that one the replicas fill is stamped as theirs (a store without
            // the record would be taken for version 1 by the todo commands). It is opened by the
            // first round: following, a server that is down is waited for (each failed round is
            // printed and tried again), while --once says so and fails.
            let sync = try Sync(local: localStore, remote: remote, shapes: shape.map { SyncShape(entity: $0) },
                                registry: Backends.registry, migrations: Todo.migrations)
            defer { sync.stop() }
            guard follow else {
                for event in try sync.sync() { emit(event.description) }
                return
            }
            let stopped = DispatchSemaphore(value: 0)
            // Rounds that found nothing to do (each commit of either store starts one) print nothing.
            let printing = sync.events.sink { event in
                switch event {
                case let .pushed(changes, rejected, _) where changes == 0 && rejected.isEmpty: return
                case let .pulled(changeSets, _, _) where changeSets == 0: return
                default: emit(event.description)
                }
            }
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
