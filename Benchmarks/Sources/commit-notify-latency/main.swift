// One-record commits to a store with live subscriptions to the whole table sorted by
// (rank, name): the table's "one-record commit → 1 live subscription notified" row taken
// apart, with the same records (the table's generator and `Codable` record as of 77dd28a),
// so the same source builds against the library before and after issue #31 and a run
// compares the library, not two harnesses. Per commit it records three times from the start
// of `write`:
//   write      when `write` returned,
//   delivered  the subscriber's own clock reading when the value reached it,
//   seen       when the waiting side saw the count reached (what the table times).
// and whether the value had arrived before `write` returned, and on which thread.
//
//     cd Benchmarks && swift run -c release commit-notify-latency
//
// Environment: PROBE_BACKEND sqlite|lmdb|memory (sqlite), PROBE_RECORDS (10000),
// PROBE_SUBSCRIPTIONS (1), PROBE_COMMITS per store (11, the table's), PROBE_STORES fresh
// stores one after another (20), PROBE_PAUSE_MS between the insert and the first commit (0),
// PROBE_WAIT table (spin 2,000 sched_yield, then usleep(200) at a time: the table's loop) or
// spin (sched_yield only).
import Foundation

let environment = ProcessInfo.processInfo.environment
func setting(_ name: String, _ fallback: Int) -> Int { environment[name].flatMap { Int($0) } ?? fallback }

let options = ProbeOptions(
    backend: environment["PROBE_BACKEND"] ?? "sqlite",
    records: setting("PROBE_RECORDS", 10_000),
    subscriptions: setting("PROBE_SUBSCRIPTIONS", 1),
    commits: setting("PROBE_COMMITS", 11),
    stores: setting("PROBE_STORES", 20),
    pauseMilliseconds: setting("PROBE_PAUSE_MS", 0),
    spinOnly: environment["PROBE_WAIT"] == "spin"
)
do {
    try Probe(options).run()
} catch {
    FileHandle.standardError.write(Data("commit-notify-latency: \(error)\n".utf8))
    exit(1)
}
