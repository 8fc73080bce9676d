import BenchSupport
import Foundation
import OpenCombineShim
import Reservoir

/// Commit in one process, live subscription in another: the time from each commit returning
/// in a writer child process (this same executable, started with `--writer`) to the
/// subscription here receiving it, on CLOCK_MONOTONIC, which both processes share. The
/// method of `reservoir latency` (Sources/ReservoirCLI/LatencyCommand.swift).
enum CrossProcess {
    /// The first argument that makes this executable the writer child.
    static let writerFlag = "--writer"

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The median and p99 latency of `commits` commits `gapMilliseconds` apart into a new
    /// store of `scheme` (sqlite or lmdb).
    static func measure(scheme: String, commits: Int, gapMilliseconds: Int) throws -> Cell {
        let directory = try scratchDirectory("cross-\(scheme)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = ReservoirSides.configuration(scheme, in: directory)
        let store = try Store.open(configuration, registry: ReservoirSides.registry)
        defer { store.close() }
        // A group no generated record is in, so only the child's records match.
        let marker = BenchRecord.groups + 1
        let arrivals = ArrivalLog()
        let subscription = store.differencesPublisher(for: FetchRequest<BenchRecord>(where: \.group == marker))
            .sink(receiveCompletion: { _ in }, receiveValue: { difference in
                let now = monotonicNanoseconds()
                let ids = difference.insertions.compactMap { change -> Int? in
                    if case let .insert(_, record, _) = change { return record.id }
                    return nil
                }
                arrivals.record(ids, at: now)
            })
        defer { subscription.cancel() }
        let committed = try runWriter(configuration: configuration, marker: marker, commits: commits, gap: gapMilliseconds)
        let deadline = ContinuousClock.now + .seconds(10)
        _ = Timing.wait(until: deadline) { arrivals.count >= committed.count }
        let latencies = arrivals.latencies(committed)
        guard latencies.count == committed.count, !latencies.isEmpty else {
            return .text("\(committed.count - latencies.count) of \(committed.count) commits did not arrive in 10 s")
        }
        return .latency(median: Timing.median(latencies), p99: Timing.percentile(latencies, 0.99))
    }

    /// Starts this executable as the writer; returns each committed id with its commit time.
    private static func runWriter(configuration: String, marker: Int, commits: Int, gap: Int) throws -> [(id: Int, time: UInt64)] {
        let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        let process = Process()
        process.executableURL = executable
        process.arguments = [writerFlag, configuration, "\(marker)", "\(commits)", "\(gap)"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("the writer process failed with status \(process.terminationStatus)") }
        return String(decoding: printed, as: UTF8.self).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "committed", let id = Int(parts[1]), let time = UInt64(parts[2]) else { return nil }
            return (id: id, time: time)
        }
    }

    /// The writer child: `--writer CONFIGURATION MARKER COMMITS GAP_MS`, printing
    /// "committed ID NANOSECONDS" after each commit returns.
    static func writer(_ arguments: [String]) throws {
        guard arguments.count == 4, let marker = Int(arguments[1]), let commits = Int(arguments[2]), let gap = Int(arguments[3]),
              commits > 0, gap >= 0 else {
            throw BenchError("writer arguments \(arguments): expected CONFIGURATION MARKER COMMITS GAP_MS")
        }
        let store = try Store.open(arguments[0], registry: ReservoirSides.registry)
        defer { store.close() }
        var random = SystemRandomNumberGenerator()
        for index in 0..<commits {
            let id = 10_000_000 + index
            try store.write { try $0.insert(BenchRecord(id: id, name: "cross \(index)", score: 0, rank: 0, group: marker)) }
            FileHandle.standardOutput.write(Data("committed \(id) \(monotonicNanoseconds())\n".utf8))
            // A little jitter, so commits do not fall into step with the other side's timers.
            if gap > 0 { usleep(UInt32(gap * 1000 + Int.random(in: 0..<max(1, gap * 200), using: &random))) }
        }
    }
}

/// When each id reached the subscription, written on the delivery thread.
final class ArrivalLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [Int: UInt64] = [:]

    func record(_ ids: [Int], at time: UInt64) {
        lock.lock()
        for id in ids where seen[id] == nil { seen[id] = time }
        lock.unlock()
    }

    var count: Int { lock.lock(); defer { lock.unlock() }; return seen.count }

    /// Arrival minus commit time, for each committed id that arrived.
    func latencies(_ committed: [(id: Int, time: UInt64)]) -> [Duration] {
        lock.lock()
        defer { lock.unlock() }
        return committed.compactMap { id, time in seen[id].map { .nanoseconds(Int64($0) - Int64(time)) } }
    }
}
