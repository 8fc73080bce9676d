import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir

struct LatencyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency",
        abstract: "Measure how soon another process's commit reaches a live subscription, and what an idle store costs.",
        discussion: """
            Subscribes to a live fetch, optionally sits idle for --idle seconds and reports the CPU
            time the process used meanwhile, then starts a second reservoir process that commits
            --commits records one at a time into the same store, and reports the time from each
            commit returning there to the subscription here receiving it (median, p90, p99, max).
            Needs a store several processes can share: sqlite:, lmdb: or postgres://.

            Example: reservoir latency --store sqlite:/tmp/l.sqlite --commits 500 --idle 60
            """
    )
    @OptionGroup var options: StoreOptions
    @Option(help: "How many commits the other process makes.") var commits = 200
    @Option(help: "Milliseconds between the other process's commits.") var gap = 5
    @Option(help: "Seconds to sit idle, subscribed, measuring CPU time, before the commits.") var idle = 0
    @Option(help: .hidden) var child: Int?

    func validate() throws {
        if commits < 1 { throw ValidationError("--commits \(commits) is not a positive count") }
        if gap < 0 { throw ValidationError("--gap \(gap) is not a number of milliseconds") }
        if idle < 0 { throw ValidationError("--idle \(idle) is not a number of seconds") }
    }

    func run() throws {
        try reporting {
            if let child { return try commitAsChild(marker: child) }
            let store = try options.open()
            defer { store.close() }
            guard store.capabilities.contains(.multiProcess) else {
                throw CommandFailure("\(options.shownConfiguration) is not shared between processes; latency needs sqlite:, lmdb: or postgres://")
            }
            let marker = Int(Date().timeIntervalSince1970 * 1000) % 1_000_000_000
            let arrivals = Locked<[Int: UInt64]>([:])
            let subscription = store.differencesPublisher(for: FetchRequest<BenchItem>(where: \.group == marker))
                .sink(receiveCompletion: { _ in }, receiveValue: { difference in
                    let now = monotonicNanoseconds()
                    arrivals.withLock { seen in
                        for case let .insert(_, item, _) in difference.insertions { seen[item.id] = now }
                    }
                })
            defer { subscription.cancel() }
            if idle > 0 { print(try measureIdle(seconds: idle)) }
            let committed = try runChild(marker: marker)
            let deadline = Date().addingTimeInterval(10)
            while arrivals.withLock({ $0.count }) < committed.count && Date() < deadline { usleep(1000) }
            let seen = arrivals.withLock { $0 }
            let latencies = committed.compactMap { id, time in seen[id].map { Double(Int64($0) - Int64(time)) / 1e6 } }.sorted()
            print(report(latencies, commits: committed.count))
        }
    }

    private func report(_ latencies: [Double], commits: Int) -> String {
        guard !latencies.isEmpty else { return "none of \(commits) commits arrived within 10 s" }
        func at(_ fraction: Double) -> String {
            String(format: "%.2f ms", latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))])
        }
        var text = "cross-process commit → live subscription, \(options.shownConfiguration), \(latencies.count) commits \(gap) ms apart: "
        text += "median \(at(0.5)), p90 \(at(0.9)), p99 \(at(0.99)), max \(at(1.0))"
        if latencies.count < commits { text += "; \(commits - latencies.count) did not arrive within 10 s" }
        return text
    }

    private func measureIdle(seconds: Int) throws -> String {
        let before = cpuSeconds()
        let start = Date()
        Thread.sleep(forTimeInterval: Double(seconds))
        let used = cpuSeconds() - before
        let elapsed = Date().timeIntervalSince(start)
        return String(format: "idle %.0f s with a live subscription: %.1f ms of CPU time (%.4f%% of one core)", elapsed, used * 1000, used / elapsed * 100)
    }

    private func cpuSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Runs this tool again as the committing process; returns each id with its commit time.
    private func runChild(marker: Int) throws -> [(Int, UInt64)] {
        guard let executable = Bundle.main.executableURL else { throw CommandFailure("cannot find the reservoir executable to start a second process") }
        let process = Process()
        process.executableURL = executable
        // The store goes by the environment, not the arguments, which `ps` shows to everyone.
        process.arguments = ["latency", "--commits", "\(commits)", "--gap", "\(gap)", "--child", "\(marker)"]
        process.environment = ProcessInfo.processInfo.environment.merging(["RESERVOIR_STORE": options.configuration]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CommandFailure("the committing process failed with status \(process.terminationStatus)") }
        return String(decoding: printed, as: UTF8.self).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "committed", let id = Int(parts[1]), let time = UInt64(parts[2]) else { return nil }
            return (id, time)
        }
    }

    private func commitAsChild(marker: Int) throws {
        let store = try options.open()
        defer { store.close() }
        var random = SystemRandomNumberGenerator()
        for index in 0..<commits {
            let id = marker * 100_000 + index
            try store.write { try $0.upsert(BenchItem(id: id, name: "latency \(index)", value: 0, group: marker)) }
            FileHandle.standardOutput.write(Data("committed \(id) \(monotonicNanoseconds())\n".utf8))
            // A little jitter, so commits do not fall into step with the other side's timers.
            if gap > 0 { usleep(UInt32(gap * 1000 + Int.random(in: 0..<max(1, gap * 200), using: &random))) }
        }
    }
}

/// CLOCK_MONOTONIC, which every process on the machine shares.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
