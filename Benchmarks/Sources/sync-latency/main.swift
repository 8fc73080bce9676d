import Foundation
import OpenCombineShim
import Reservoir
import ReservoirPostgres
import ReservoirSQLite

// Sync figures (issue #34), against a PostgreSQL server:
//
// 1. Latency: a commit on the server until a live fetch on each replica's local store holds it,
//    with 1, 10 and 50 replicas following the server (each a `Sync` with `start()` and a local
//    store of its own, all in this process), median and p99 over the commits; and the server
//    process CPU per commit (from pg_stat_activity's backends, read through /proc).
// 2. Catch-up: a server store of N records read into an empty replica by its first sync
//    (time, records per second, this process's peak resident memory).
//
//     cd Benchmarks && ../scripts/with-postgres swift run -c release sync-latency
//
// BENCH_SYNC_CLIENTS=1,10,50, BENCH_SYNC_COMMITS=200 (per client count), BENCH_SYNC_LOCAL=memory|sqlite,
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
let clientCounts = (environment["BENCH_SYNC_CLIENTS"] ?? "1,10,50").split(separator: ",").compactMap { Int($0) }
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
    case "sqlite": try Store.open("sqlite:" + scratch.appendingPathComponent("replica\(index).sqlite").path, registry: registry)
    default: try Store.open("memory:", registry: registry)
    }
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
        if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) { seconds[pid] = (user + system) / ticks }
    }
    return seconds
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

    print("| replicas (\(localKind) local stores) | commits | median | p99 | max | server CPU per commit |")
    print("| --- | --- | --- | --- | --- | --- |")
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
        Thread.sleep(forTimeInterval: 0.5)
        let cpuBefore = serverCPUSeconds()
        var sent: [Int: Double] = [:]
        for n in 1...commits {
            let at = now()
            try writer.write { tx in try tx.insert(Note(id: n, sent: at)) }
            sent[n] = at
            Thread.sleep(forTimeInterval: 0.02)
        }
        let deadline = now() + 30
        while now() < deadline && arrivals.withLock({ $0.values.reduce(0) { $0 + $1.count } }) < commits * clients {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let cpu = cpuUsed(from: cpuBefore, to: serverCPUSeconds())
        if arrivals.withLock({ $0.count <= 1 }) {
            print("no arrivals: local holds \((try? replicas.first?.0.count(FetchRequest<Note>())) ?? -1), status \(replicas.first.map { "\($0.1.status)" } ?? "")")
            exit(1)
        }
        let latencies = arrivals.withLock { all in all.flatMap { id, times in times.compactMap { time in sent[id].map { time - $0 } } } }
        let missing = commits * clients - latencies.count
        print("| \(clients) | \(commits) | \(milliseconds(percentile(latencies, 0.5))) | \(milliseconds(percentile(latencies, 0.99))) | "
              + "\(milliseconds(latencies.max() ?? 0)) | \(milliseconds(cpu / Double(commits)))\(missing > 0 ? " (\(missing) arrivals missing)" : "") |")
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
    let started = now()
    let events = try sync.sync()
    let took = now() - started
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let held = try local.count(FetchRequest<Note>())
    print("")
    print("catch-up into an empty \(localKind) replica: \(held) records in \(String(format: "%.2f", took)) s, "
          + "\(Int(Double(held) / took)) records/s, peak resident \(usage.ru_maxrss / 1024) MiB (\(events.map(\.description).joined(separator: "; ")))")
    sync.stop()
    local.close()
    writer.close()
    try? PostgresBackend.dropStore(url)
}
