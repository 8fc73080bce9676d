// A client of the PostgreSQL fault loop (Tests/ReservoirPostgresTests/FaultLoopTests.swift):
// it writes uniquely identifiable records one at a time while the test crashes, freezes and
// cuts the server under it, logs every outcome, and keeps a live subscription and a
// change-set subscription. At the end it reports what its subscriptions hold.
//
//   ReservoirPostgresTestHelper --fault-loop URL CLIENT DIRECTORY BOUND_SECONDS
//
// Record `n` of client `c` has id `c * 1_000_000 + n` and body "client c record n attempt a".
// Each attempt ends in one of (one line each, ending with `@` and the time, flushed at once):
//
//   ack ID ATTEMPT                 write returned: committed
//   unknown ID ATTEMPT TXID        .commitOutcomeUnknown: asked with commitOutcome(ofTransaction:)
//                                  until the server knows, then
//   resolved ID ATTEMPT committed  counted as acknowledged (not written again), or
//   resolved ID ATTEMPT aborted    written again with the same id
//   failed ID ATTEMPT CODE         any other error, which says nothing was committed: written
//                                  again with the same id, so a failure that had committed
//                                  anyway is caught by the retry's .duplicateID
//
// A call that takes longer than BOUND_SECONDS prints `slow OP SECONDS`. When DIRECTORY/stop
// appears the client finishes its record and prints `stopped RECORDS`; when DIRECTORY/check
// appears (every client stopped) it waits until its live subscription equals a fresh fetch
// and prints `final COUNT DIGEST …`, then exits 0. Anything wrong prints `FAIL …` and exits 1.
import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirPostgres
import ReservoirTestRecords
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum FaultLoopClient {
    static let argument = "--fault-loop"

    /// One line to the test, at once (standard output is a pipe, buffered otherwise).
    nonisolated static func say(_ line: String) {
        print("\(line) @\(Date().timeIntervalSince1970)")
        fflush(nil)  // every stream: `stdout` itself is shared mutable state to Swift 6
    }

    nonisolated static func fail(_ message: String) -> Never {
        say("FAIL \(message)")
        exit(1)
    }

    /// What the subscriptions saw, written from the store's delivery threads.
    struct Seen: Sendable {
        var live: [Message] = []
        var liveFailed: String?
        var sequences: [UInt64] = []
        /// Change sets saying "re-read": each stands for the stretch of commits since the one before.
        var incomplete: Set<UInt64> = []
        var changeSetsFailed: String?
    }

    nonisolated static func main(_ arguments: [String]) -> Never {
        guard arguments.count == 4, let client = Int(arguments[1]), let bound = Double(arguments[3]) else {
            fail("usage: ReservoirPostgresTestHelper --fault-loop URL CLIENT DIRECTORY BOUND_SECONDS")
        }
        let directory = URL(fileURLWithPath: arguments[2])
        let stopFile = directory.appendingPathComponent("stop").path
        let checkFile = directory.appendingPathComponent("check").path
        var longest = (operation: "none", seconds: 0.0)
        /// Runs `body`, printing `slow` when it took longer than the bound.
        func timed<T>(_ operation: String, _ body: () throws -> T) rethrows -> T {
            let started = ContinuousClock.now
            defer {
                let elapsed = ContinuousClock.now - started
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                if seconds > longest.seconds { longest = (operation, seconds) }
                if seconds > bound { say("slow \(operation) \(String(format: "%.1f", seconds))") }
            }
            return try body()
        }

        let store: Store
        do {
            store = try Store.open(arguments[0], registry: BackendRegistry([.postgres]))
        } catch {
            fail("open: \(error)")
        }
        guard let backend = store.backend as? PostgresBackend else { fail("not a PostgreSQL store") }

        // The live subscription, made again should a fault end it (a re-read that fails ends
        // a subscription with the error, as the contract says); the test counts how often.
        let seen = Locked(Seen())
        var live: AnyCancellable?
        var subscriptions = 0
        func subscribe() {
            subscriptions += 1
            seen.withLock { $0.live = []; $0.liveFailed = nil }
            live = store.differencesPublisher(for: FetchRequest<Message>(sortBy: [.ascending(\.id)]))
                .sink(receiveCompletion: { completion in
                    let why: String
                    switch completion {
                    case let .failure(error): why = "\(error)"
                    case .finished: why = "finished"
                    }
                    seen.withLock { $0.liveFailed = why }
                }, receiveValue: { difference in
                    seen.withLock { $0.live = $0.live.applying(difference) ?? $0.live }
                })
        }
        subscribe()
        let changes = store.changeSets.sink(receiveCompletion: { completion in
            seen.withLock { $0.changeSetsFailed = "\(completion)" }
        }, receiveValue: { changeSet in
            seen.withLock {
                $0.sequences.append(changeSet.sequence)
                if !changeSet.isComplete { $0.incomplete.insert(changeSet.sequence) }
            }
        })
        // Faults start when every client has its subscription's first value (the test wrote
        // a record before starting the clients).
        guard eventuallyBlocking(timeout: .seconds(120), { seen.withLock { !$0.live.isEmpty || $0.liveFailed != nil } }) else {
            fail("the live subscription delivered nothing within 120 s")
        }
        if let failure = seen.withLock({ $0.liveFailed }) { fail("the live subscription failed before any fault: \(failure)") }
        say("ready")

        var record = 0
        var resubscribed = 0
        while !FileManager.default.fileExists(atPath: stopFile) {
            var attempt = 0
            while true {
                attempt += 1
                let message = Message(id: client * 1_000_000 + record, author: client,
                                      body: "client \(client) record \(record) attempt \(attempt)")
                do {
                    try timed("write") { try store.write { try $0.insert(message) } }
                    say("ack \(message.id) \(attempt)")
                    break
                } catch let error as ReservoirError where error.code == .commitOutcomeUnknown {
                    guard let transaction = backend.unresolvedCommit else { fail("\(message.id): .commitOutcomeUnknown without a transaction: \(error)") }
                    say("unknown \(message.id) \(attempt) \(transaction)")
                    // The test resumes every process it stops and restarts the server it
                    // crashes, so the server comes to know; five minutes is a hang guard.
                    var outcome: Bool?
                    let known = eventuallyBlocking(timeout: .seconds(300)) {
                        do {
                            outcome = try timed("commitOutcome") { try backend.commitOutcome(ofTransaction: transaction) }
                        } catch let error as ReservoirError where error.code == .notFound {
                            fail("\(message.id): the server forgot transaction \(transaction): \(error)")
                        } catch {
                            Thread.sleep(forTimeInterval: 0.1)
                        }
                        return outcome != nil
                    }
                    guard known, let committed = outcome else { fail("\(message.id): transaction \(transaction) unresolved after 300 s") }
                    say("resolved \(message.id) \(attempt) \(committed ? "committed" : "aborted")")
                    if committed { break }
                } catch let error as ReservoirError where error.code == .duplicateID {
                    fail("\(message.id) attempt \(attempt): the record exists, so an earlier attempt reported as not committed had committed: \(error)")
                } catch let error as ReservoirError {
                    say("failed \(message.id) \(attempt) \(error.code)")
                    if ![.timeout, .backend, .busy, .cannotOpen].contains(error.code) {
                        fail("\(message.id) attempt \(attempt): an error no fault explains: \(error)")
                    }
                    // A server that is down refuses at once: do not spin.
                    Thread.sleep(forTimeInterval: 0.05)
                } catch {
                    fail("\(message.id) attempt \(attempt): \(error)")
                }
            }
            record += 1
            // Reads too, under the same bound; their failures are the faults'.
            if record % 4 == 0 { _ = try? timed("count") { try store.count(FetchRequest<Message>(where: \.author == client)) } }
            if seen.withLock({ $0.liveFailed != nil }) {
                let why = seen.withLock { $0.liveFailed ?? "" }
                say("resubscribing after \(why.prefix(200))")
                resubscribed += 1
                subscribe()
            }
        }
        say("stopped \(record)")

        guard eventuallyBlocking(timeout: .seconds(600), { FileManager.default.fileExists(atPath: checkFile) }) else {
            fail("no check file within 600 s of stopping")
        }
        // Every client has stopped: the store no longer changes. A fresh fetch (retried: the
        // last fault may still be ending) against the live subscription.
        var fetched: [Message] = []
        var last: UInt64 = 0
        let read = eventuallyBlocking(timeout: .seconds(120)) {
            do {
                fetched = try store.fetch(FetchRequest<Message>(sortBy: [.ascending(\.id)]))
                last = try store.backend.read { try $0.lastSequence() }
                return true
            } catch {
                Thread.sleep(forTimeInterval: 0.2)
                return false
            }
        }
        guard read else { fail("no fresh fetch within 120 s of the end") }
        if seen.withLock({ $0.liveFailed != nil }) {
            resubscribed += 1
            subscribe()
        }
        // The subscriptions catch up from the change log (NOTIFY, or the store's probe).
        guard eventuallyBlocking(timeout: .seconds(120), { seen.withLock { $0.live == fetched && $0.sequences.last == last } }) else {
            let now = seen.withLock { $0 }
            let liveIDs = Set(now.live.map(\.id)), fetchedIDs = Set(fetched.map(\.id))
            let steps = zip(now.sequences, now.sequences.dropFirst()).filter { $1 != $0 + 1 }.prefix(10)
            fail("subscriptions did not reach the fetch in 120 s: live \(now.live.count) records of \(fetched.count) (\(now.liveFailed ?? "running"); missing \(fetchedIDs.subtracting(liveIDs).sorted().prefix(10)), extra \(liveIDs.subtracting(fetchedIDs).sorted().prefix(10))), last change set \(now.sequences.last ?? 0) of \(last) (\(now.changeSetsFailed ?? "running"); steps other than +1: \(steps.map { "\($0)→\($1)" }))")
        }
        let now = seen.withLock { $0 }
        // Every commit announced once, in order: one after another, except that an incomplete
        // change set stands for the stretch it ends.
        let steps = zip(now.sequences, now.sequences.dropFirst()).filter { $1 != $0 + 1 && !($1 > $0 && now.incomplete.contains($1)) }
        guard let first = now.sequences.first, steps.isEmpty, now.sequences.last == last else {
            fail("change sets not announced once each in order, \(now.sequences.first ?? 0)...\(now.sequences.last ?? 0) of \(last): \(steps.prefix(10).map { "\($0)→\($1)" })")
        }
        say("final \(fetched.count) \(Message.digest(now.live)) change sets \(first)...\(last), \(now.incomplete.count) incomplete, \(resubscribed) resubscriptions, longest call \(longest.operation) \(String(format: "%.1f", longest.seconds)) s")
        live?.cancel()
        changes.cancel()
        store.close()
        exit(0)
    }
}
