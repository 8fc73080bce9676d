import Foundation

/// The lines under the table: when, on what, how long, and how each figure was made.
enum MachineDescription {
    static func current(elapsed: Duration, settings: Settings) -> String {
        let date = ISO8601DateFormatter().string(from: Date())
        let info = ProcessInfo.processInfo
        let memory = Double(info.physicalMemory) / Double(1 << 30)
        var lines = [
            "Run \(date) on \(cpuModel() ?? "an unknown CPU"), \(info.activeProcessorCount) cores, "
                + String(format: "%.0f GiB", memory) + ", \(info.operatingSystemVersionString); "
                + String(format: "%.0f s", Timing.seconds(elapsed)) + " for the run (build not included).",
            "Each figure is the median of \(settings.repetitions) runs (basic rows: the whole workload, the sides in one order and then in reverse, "
                + "alternately) or of the timed "
                + "commits (subscription rows: write start until every affected subscriber has its new value; GRDB: "
                + "ValueObservation on a DatabasePool, at most 5 commits, capped at \(settings.capSeconds) s).",
            "SQLite sides: WAL, synchronous=NORMAL. LMDB sides: no fsync (Reservoir durability=none, raw MDB_NOSYNC). "
                + "Reservoir columns: `@Storable` records; each `Codable` line is the row above with records stored through `Codable`. "
                + "A bulk insert is timed alone: each side's database is opened afresh and its table made, empty, untimed before it "
                + "(a store's by one record written and deleted). "
                + "Ratios: a figure divided by its own engine's raw C side in the same row (SQLite and GRDB by raw SQLite C, LMDB by raw LMDB C, "
                + "PostgreSQL by raw libpq C; a `Codable` line by the raw figures of the line above).",
        ]
        if let sqlite = sqliteVersion() { lines.append("SQLite \(sqlite), GRDB 7.10.0.") }
        lines.append(BenchPostgres.shared.serverDescription().map { $0 + "." } ?? "No PostgreSQL server (RESERVOIR_BENCH_POSTGRES unset): PostgreSQL columns not run.")
        return lines.joined(separator: "\n")
    }

    /// The CPU model from /proc/cpuinfo on Linux, sysctl on Apple platforms.
    static func cpuModel() -> String? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix("model name") }
        return line?.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
        #else
        var size = 0
        guard sysctlbyname("machdep.cpu.brand_string", nil, &size, nil, 0) == 0, size > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: size)
        guard sysctlbyname("machdep.cpu.brand_string", &buffer, &size, nil, 0) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #endif
    }
}
