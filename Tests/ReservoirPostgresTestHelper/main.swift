// One app process of ReservoirPostgresTests' multi-process test: it opens the store named on
// the command line (over TCP, as a process on another machine would), keeps a live
// subscription and a change-set subscription, writes its share concurrently with the other
// clients, and at quiescence checks its subscriptions against a fresh fetch.
//
//   ReservoirPostgresTestHelper URL CLIENT WRITES TOTAL_RECORDS
//
// Prints "ok …" and exits 0, or prints "FAIL …" and exits 1. With `--fault-loop` first, it is
// a client of the fault loop instead (FaultLoopClient.swift); with `--history-consumer`, the
// consumer process of the history SIGKILL trials (HistoryConsumerKill); with `--migrate`, the
// migrating client of the migration SIGKILL trials (MigrationCrash); with `--sync-client`, a
// sync client of the sync SIGKILL trials (SyncClientKill), its local store SQLite or LMDB.
import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirPostgres
import ReservoirSQLite
import ReservoirTestRecords

func fail(_ message: String) -> Never {
    print("FAIL \(message)")
    exit(1)
}

/// The client's whole run, outside the main actor: the subscriptions' closures run on the
/// store's delivery threads.
nonisolated func runClient() -> Never {
    let arguments = CommandLine.arguments
    guard arguments.count == 5, let client = Int(arguments[2]), let writes = Int(arguments[3]), let total = Int(arguments[4]) else {
        fail("usage: ReservoirPostgresTestHelper URL CLIENT WRITES TOTAL_RECORDS")
    }
    let store: Store
    do {
        store = try Store.open(arguments[1], registry: BackendRegistry([.postgres]))
    } catch {
        fail("open: \(error)")
    }

    let state = Locked<(live: [Message], sequences: [UInt64], failure: String?)>(([], [], nil))
    let live = store.differencesPublisher(for: FetchRequest<Message>(sortBy: [.ascending(\.id)]))
        .sink(receiveCompletion: { completion in
            if case let .failure(error) = completion { state.withLock { $0.failure = "live subscription failed: \(error)" } }
        }, receiveValue: { difference in
            state.withLock { $0.live = $0.live.applying(difference) ?? $0.live }
        })
    let changes = store.changeSets.sink { changeSet in
        state.withLock { $0.sequences.append(changeSet.sequence) }
    }

    // The other clients write at the same time: every commit is serialised by the server.
    for write in 0..<writes {
        do {
            try store.write { tx in
                try tx.insert(Message(id: client * 100_000 + write, author: client, body: "client \(client) write \(write)"))
            }
        } catch {
            fail("write \(write): \(error)")
        }
    }

    do {
        guard try eventuallyBlocking(timeout: .seconds(60), { try store.count(FetchRequest<Message>()) == total }) else {
            fail("the store never held \(total) records (has \(try store.count(FetchRequest<Message>())))")
        }
        let fetched = try store.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))
        let last = try store.backend.read { try $0.lastSequence() }
        guard eventuallyBlocking(timeout: .seconds(20), { state.withLock { $0.live == fetched && $0.sequences.last == last } }) else {
            let seen = state.withLock { $0 }
            fail("subscriptions did not reach the fetch: live \(seen.live.count) of \(fetched.count), last sequence seen \(seen.sequences.last ?? 0) of \(last), \(seen.failure ?? "no failure")")
        }
        let seen = state.withLock { $0 }
        // Every commit announced exactly once, in order, from the first this client saw on.
        guard let first = seen.sequences.first, seen.sequences == Array(first...last) else {
            fail("change sets not consecutive and once each: \(seen.sequences)")
        }
        print("ok client \(client): live \(seen.live.count) = fetch \(fetched.count), change sets \(first)...\(last)")
    } catch {
        fail("checking: \(error)")
    }
    live.cancel()
    changes.cancel()
    store.close()
    exit(0)
}

if CommandLine.arguments.dropFirst().first == FaultLoopClient.argument {
    FaultLoopClient.main(Array(CommandLine.arguments.dropFirst(2)))
}
if CommandLine.arguments.dropFirst().first == HistoryConsumerKill.childArgument {
    HistoryConsumerKill.childMain(registry: BackendRegistry([.postgres]))
}
if CommandLine.arguments.dropFirst().first == SyncClientKill.childArgument {
    SyncClientKill.childMain(registry: BackendRegistry([.postgres, .sqlite, .lmdb]))
}
if CommandLine.arguments.dropFirst().first == MigrationCrash.childArgument {
    MigrationCrash.childMain(registry: BackendRegistry([.postgres]))
}
runClient()
