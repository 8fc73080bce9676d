import Foundation
import Reservoir
import ReservoirLMDB

// What opening an LMDB store costs, by size: opening checks every page of data.mdb with
// `pread` before LMDB may follow one (Backends.md § LMDB, "Damaged files").
//
//     cd Benchmarks && swift run -c release lmdb-open-cost [MB ...]     (default 25 250 1000)
//
// Per size: a store of notes grown past the size (durability=none, 5,000 notes a commit),
// then ROUNDS (default 5) rounds of: `Store.open` and `close` with data.mdb in the page cache
// (warm); the page walk alone (`LMDBBackend.verifyFiles()`, warm); `Store.open` after
// `posix_fadvise(DONTNEED)` dropped data.mdb from the page cache (cold: read from disk).
// Best and median wall-clock time, and the best thread CPU time of the warm open.

struct Note: Storable {
    var id: Int
    var title: String
    var rank: Int
    static let schema = Schema<Note>("notes", fields: [.field(\.id), .field(\.title), .field(\.rank, indexed: true)])
}

func now(_ clock: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Wall-clock and thread CPU seconds of `body`.
func measure(_ body: () throws -> Void) rethrows -> (wall: Double, cpu: Double) {
    let (wall, cpu) = (now(CLOCK_MONOTONIC), now(CLOCK_THREAD_CPUTIME_ID))
    try body()
    return (now(CLOCK_MONOTONIC) - wall, now(CLOCK_THREAD_CPUTIME_ID) - cpu)
}

func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}

/// Drops data.mdb's pages from the page cache (clean pages only; no root needed). Linux
/// only: elsewhere the cold column repeats a warm open.
func dropFromCache(_ path: String) {
    #if os(Linux)
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return }
    fsync(fd)
    _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
    close(fd)
    #endif
}

func formatted(_ seconds: Double) -> String {
    seconds >= 1 ? String(format: "%.2f s", seconds) : String(format: "%.1f ms", seconds * 1000)
}

let rounds = max(1, Int(ProcessInfo.processInfo.environment["ROUNDS"] ?? "5") ?? 5)
let sizes = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let targets = (sizes.isEmpty ? [25, 250, 1000] : sizes).map { $0 * 1_000_000 }
let registry = BackendRegistry([.lmdb])
let title = String(repeating: "a note long enough to fill pages ", count: 12)

print("LMDB open cost, \(rounds) rounds: best / median wall clock (warm: data.mdb in the page cache; cold: dropped from it)")
print("| data.mdb | pages | open, warm | open, warm, thread CPU | page walk alone, warm | open, cold |")
print("| --- | --- | --- | --- | --- | --- |")
for target in targets {
    let directory = FileManager.default.temporaryDirectory.path + "/reservoir-open-cost-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let configuration = "lmdb:\(directory)?durability=none&mapsize=2GiB&maxmapsize=64GiB"
    let data = directory + "/data.mdb"
    do {
        let store = try Store.open(configuration, registry: registry)
        var next = 0
        while fileSize(data) < target {
            try store.write { tx in
                for id in next..<(next + 5_000) { try tx.insert(Note(id: id, title: "\(id) " + title, rank: id % 1000)) }
            }
            next += 5_000
        }
        store.close()
        var warm: [(wall: Double, cpu: Double)] = [], walk: [Double] = [], cold: [Double] = []
        for _ in 0..<rounds {
            warm.append(try measure { try Store.open(configuration, registry: registry).close() })
            let backend = try LMDBBackend(path: directory)
            var problems: [String] = []
            walk.append(try measure { problems = try backend.verifyFiles().problems }.wall)
            backend.close()
            guard problems.isEmpty else { throw ReservoirError(.corrupt, "the fresh store at \(directory) has problems: \(problems)") }
            dropFromCache(data)
            cold.append(try measure { try Store.open(configuration, registry: registry).close() }.wall)
        }
        func bestMedian(_ values: [Double]) -> String {
            let sorted = values.sorted()
            return "\(formatted(sorted[0])) / \(formatted(sorted[sorted.count / 2]))"
        }
        let size = fileSize(data)
        print("| \(String(format: "%.1f", Double(size) / 1e6)) MB | \(size / 4096) | \(bestMedian(warm.map(\.wall))) | \(formatted(warm.map(\.cpu).min() ?? 0)) | \(bestMedian(walk)) | \(bestMedian(cold)) |")
    } catch {
        print("size \(target) bytes: \(error)")
        exit(1)
    }
}
