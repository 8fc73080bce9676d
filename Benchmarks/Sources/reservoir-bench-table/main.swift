// Every workload against the peers on the same generated data, in one process run, printed as
// one Markdown table (progress on stderr). Run it with `Benchmarks/run`, or:
//
//     cd Benchmarks && swift run -c release reservoir-bench-table
//
// Each figure is the median of repeated runs; each Reservoir figure shows its ratio to its own
// engine's raw C side in its row (SQLite to raw SQLite, LMDB to raw LMDB, PostgreSQL to raw
// libpq). The PostgreSQL columns need a server: RESERVOIR_BENCH_POSTGRES, or the throwaway one
// `Benchmarks/run` starts. A peer that cannot finish a row within the cap (BENCH_CAP, 30 s)
// shows "did not finish". `--writer ...` makes this executable the cross-process row's
// committing child (see CrossProcess.swift).
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == CrossProcess.writerFlag {
    do {
        try CrossProcess.writer(Array(arguments.dropFirst()))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("writer: \(error)\n".utf8))
        exit(1)
    }
}

_ = ProgressLog.start
let settings = Settings(environment: ProcessInfo.processInfo.environment)
let run = TableRun(settings: settings)
if let profile = ProcessInfo.processInfo.environment["BENCH_PROFILE"] {
    do {
        try Profile.run(profile, settings: settings, dataset: run.dataset)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("reservoir-bench-table: \(error)\n".utf8))
        exit(1)
    }
}
do {
    ProgressLog.note("generated \(TableRun.count(run.dataset.records.count)) records")
    try run.basicRows()
    try run.subscriptionRows()
    try run.distinctRows()
    try run.crossProcessRow()
} catch {
    FileHandle.standardError.write(Data("reservoir-bench-table: \(error)\n".utf8))
    exit(1)
}
print(run.table.markdown)
print()
print(MachineDescription.current(elapsed: ContinuousClock.now - ProgressLog.start, settings: settings))
