import Foundation
import OpenCombineShim
import Reservoir
import ReservoirPostgres
import ReservoirSQLite

// Sync figures (issue #34), against a PostgreSQL server:
//
// 1. Latency: a commit on the server until a live fetch on each replica's local store holds it,
//    with 1, 10 and 50 replicas following the server (each a `Sync` with `start()` and a local
//    store of its own, all in this process), median and p99 over the commits (and the same for
//    one plain store on the server, no replica: the server-to-store part); the server's CPU
//    per commit (its postgres processes, read through /proc) and this process's (the replicas
//    and the one writing store; the writer's share is the one-replica row's, nearly).
// 2. Catch-up: a server store of N records read into an empty replica by its first sync
//    (time, records per second, this process's peak resident memory).
//
//     cd Benchmarks && ../scripts/with-postgres swift run -c release sync-latency
//
// BENCH_SYNC_CLIENTS=1,10,50 (0: skip), BENCH_SYNC_COMMITS=200 (per client count), BENCH_SYNC_LOCAL=memory|sqlite,
// BENCH_SYNC_CATCHUP=1000000 (0: skip). RESERVOIR_BENCH_POSTGRES or RESERVOIR_TEST_POSTGRES names the server.

struct Note: Storable {
    var id: Int
    var sent: Double
    static let schema = Schema<Note>("sync_bench_notes", fields: [.field(\.sent)])
}

let environment = ProcessInfo.processInfo.environment
guard let server = environment["RESERVOIR_BENCH_POSTGRES"] ?? environment["RESERVOIR_TEST_POSTGRES"] else {
    print("needs RESERVOIR_BENCH_POSTGRES or RESERVOIR_TEST_POSTGRES (run through ../scripts/with-postgres)")
    exit(2)
}
let clientCounts = (environment["BENCH_SYNC_CLIENTS"] ?? "1,10,50").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
let commits = environment["BENCH_SYNC_COMMITS"].flatMap { Int($0) } ?? 200
let localKind = environment["BENCH_SYNC_LOCAL"] ?? "memory"
let catchUp = environment["BENCH_SYNC_CATCHUP"].flatMap { Int($0) } ?? 1_000_000
let registry = BackendRegistry([.postgres, .sqlite])
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sync-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func freshServerStore(_ name: String) -> String {
    server + (server.contains("?") ? "&" : "?") + "schema=\(name)_\(UInt32.random(in: 0...UInt32.max))"
}

func localStore(_ index: Int) throws -> Store {
    switch localKind {
    // A file of its own each time: a replica made before holds another server's records.
    case "sqlite": try Store.open("sqlite:" + scratch.appendingPathComponent("replica\(index)-\(UUID().uuidString).sqlite").path, registry: registry)
    default: try Store.open("memory:", registry: registry)
    }
}

/// The server's postmaster, when `scripts/with-postgres` started it (its data directory is
/// under RESERVOIR_TEST_POSTGRES_SOCKET): only it and its children are counted, not other
/// clusters on the machine.
let postmaster = environment["RESERVOIR_TEST_POSTGRES_SOCKET"].flatMap { directory in
    (try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8))?.split(separator: "\n").first.map(String.init)
}

/// CPU seconds (user + system) each server process (`postgres`) has used, by pid.
func serverCPUSeconds() -> [String: Double] {
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var seconds: [String: Double] = [:]
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [:] }
    for pid in entries where pid.allSatisfy(\.isNumber) {
        guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8), comm.hasPrefix("postgres"),
              let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[1] is the parent's pid.
        if let postmaster, pid != postmaster, fields.count > 1, String(fields[1]) != postmaster { continue }
        if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) { seconds[pid] = (user + system) / ticks }
    }
    return seconds
}

/// CPU seconds (user + system) this process has used.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// The server CPU used between two readings, by the processes alive at both.
func cpuUsed(from before: [String: Double], to after: [String: Double]) -> Double {
    after.reduce(0) { total, entry in total + max(0, entry.value - (before[entry.key] ?? entry.value)) }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}

func milliseconds(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1000) }

// MARK: - Latency

/// Off the main actor: the live fetches' closures run on the stores' threads.
nonisolated func measureLatency() throws {

    print("| replicas (\(localKind) local stores) | commits | median | p99 | max | server CPU per commit | replicas' CPU per commit | a plain store following the server: median, p99 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for clients in clientCounts {
        let url = freshServerStore("latency")
        let writer = try Store.open(url, registry: registry)
        try writer.write { tx in try tx.insert(Note(id: 0, sent: 0)) }
        let arrivals = Locked<[Int: [Double]]>([:])
        var replicas: [(Store, Sync, AnyCancellable)] = []
        for index in 0..<clients {
            let local = try localStore(index)
            let sync = try Sync(local: local, remote: url, registry: registry)
            try sync.sync()
            let live = local.differencesPublisher(for: FetchRequest<Note>(sortBy: [.ascending(\.id)]), isolation: nil)
                .sink(receiveCompletion: { print("a live fetch ended: \($0)") }, receiveValue: { difference in
                    let at = now()
                    for case let .insert(_, note, _) in difference { arrivals.withLock { $0[note.id, default: []].append(at) } }
                })
            sync.start()
            replicas.append((local, sync, live))
        }
        // A plain store following the server (no replica): its live fetch's latency is the
        // server-to-store part of a replica's.
        let follower = try Store.open(url, registry: registry)
        let followed = Locked<[Int: Double]>([:])
        let following = follower.differencesPublisher(for: FetchRequest<Note>(sortBy: [.ascending(\.id)]), isolation: nil)
            .sink(receiveCompletion: { _ in }, receiveValue: { difference in
                let at = now()
                for case let .insert(_, note, _) in difference { followed.withLock { $0[note.id] = at } }
            })
        Thread.sleep(forTimeInterval: 0.5)
        let cpuBefore = serverCPUSeconds()
        let ownBefore = ownCPUSeconds()
        var sent: [Int: Double] = [:]
        for n in 1...commits {
            let at = now()
            try writer.write { tx in try tx.insert(Note(id: n, sent: at)) }
            sent[n] = at
            Thread.sleep(forTimeInterval: 0.02)
        }
        // Counts the measured commits' arrivals only (each live fetch's first value brings record 0).
        let arrived = { arrivals.withLock { all in (1...commits).reduce(0) { $0 + (all[$1]?.count ?? 0) } } }
        let deadline = now() + 30
        while now() < deadline && arrived() < commits * clients {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let cpu = cpuUsed(from: cpuBefore, to: serverCPUSeconds())
        let own = ownCPUSeconds() - ownBefore
        if arrivals.withLock({ $0.count <= 1 }) {
            print("no arrivals: local holds \((try? replicas.first?.0.count(FetchRequest<Note>())) ?? -1), status \(replicas.first.map { "\($0.1.status)" } ?? "")")
            exit(1)
        }
        if environment["BENCH_SYNC_DETAIL"] != nil {
            // Each commit's slowest and median arrival, in commit order, to see whether the tail
            // is a few slow commits (every replica late) or spread over all of them.
            let perCommit = arrivals.withLock { all in (1...commits).map { id in (all[id] ?? []).map { $0 - (sent[id] ?? 0) } } }
            for (index, times) in perCommit.enumerated() where !times.isEmpty {
                FileHandle.standardError.write(Data("commit \(index + 1): median \(milliseconds(percentile(times, 0.5))), max \(milliseconds(times.max() ?? 0))\n".utf8))
            }
        }
        let latencies = arrivals.withLock { all in all.flatMap { id, times in times.compactMap { time in sent[id].map { time - $0 } } } }
        let missing = commits * clients - latencies.count
        let plain = followed.withLock { all in all.compactMap { id, time in sent[id].map { time - $0 } } }
        print("| \(clients) | \(commits) | \(milliseconds(percentile(latencies, 0.5))) | \(milliseconds(percentile(latencies, 0.99))) | "
              + "\(milliseconds(latencies.max() ?? 0)) | \(milliseconds(cpu / Double(commits))) | \(milliseconds(own / Double(commits)))\(missing > 0 ? " (\(missing) arrivals missing)" : "") | "
              + "\(plain.isEmpty ? "none" : milliseconds(percentile(plain, 0.5)) + ", " + milliseconds(percentile(plain, 0.99))) |")
        following.cancel()
        follower.close()
        for (local, sync, live) in replicas {
            live.cancel()
            sync.stop()
            local.close()
        }
        writer.close()
        try? PostgresBackend.dropStore(url)
    }
}

try measureLatency()

// MARK: - Catch-up

if catchUp > 0 {
    let url = freshServerStore("catchup")
    let writer = try Store.open(url, registry: registry)
    let batch = 10_000
    for start in stride(from: 0, to: catchUp, by: batch) {
        try writer.write { tx in
            for id in start..<min(catchUp, start + batch) { try tx.insert(Note(id: id, sent: Double(id))) }
        }
    }
    let local = try localStore(999)
    let sync = try Sync(local: local, remote: url, registry: registry)
    var filled = rusage()
    getrusage(RUSAGE_SELF.rawValue, &filled)
    let started = now()
    let events = try sync.sync()
    let took = now() - started
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let held = try local.count(FetchRequest<Note>())
    print("")
    print("catch-up into an empty \(localKind) replica: \(held) records in \(String(format: "%.2f", took)) s, "
          + "\(Int(Double(held) / took)) records/s, peak resident \(usage.ru_maxrss / 1024) MiB (\(filled.ru_maxrss / 1024) MiB before the sync, "
          + "after filling the server; \(sync.status.pendingChanges) local changes waiting after it) (\(events.map(\.description).joined(separator: "; ")))")
    sync.stop()
    local.close()
    writer.close()
    try? PostgresBackend.dropStore(url)
}
