// swift-tools-version:6.0
// The one benchmark package, run on purpose, never as tests (GRDB is a benchmark dependency only).
//     Benchmarks/run                                     every workload against each engine's raw C side, one Markdown table
//     cd Benchmarks && swift run -c release reservoir-sqlite-bench   SQLite backend vs raw C vs GRDB, in detail
//     cd Benchmarks && swift run -c release lmdb-bench               LMDB backend vs raw LMDB C, in detail
//     cd Benchmarks && swift run -c release observation-benchmark    live-subscription cost per commit
//     cd Benchmarks && swift run -c release lmdb-open-cost           LMDB open (page check) cost by store size
//     cd Benchmarks && swift run -c release commit-notify-latency    one-record commit → 1 subscription, write vs delivery vs seen
//     cd Benchmarks && ../scripts/with-postgres swift run -c release history-catchup   history catch-up vs raw C, log bytes
//     cd Benchmarks && ../scripts/with-postgres swift run -c release sync-latency      sync: commit to replicas' live fetches, catch-up
//     cd Benchmarks && ../scripts/with-postgres swift run -c release migration-bench [records]   migrating 1,000,000 records vs hand-written SQL/C, GRDB
// Each keeps its profiling modes (BENCH_PROFILE=..., `observation-benchmark profile ...`).
import PackageDescription

let package = Package(
    name: "ReservoirBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Reservoir", path: ".."),
        // For comparison only: a widely used Swift SQLite library, with Codable records.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
    ],
    targets: [
        // The raw C API the backend is compared against, through its own module map.
        .systemLibrary(
            name: "CSQLiteRaw",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .executableTarget(
            name: "reservoir-sqlite-bench",
            dependencies: [
                "CSQLiteRaw",
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirMacros", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Raw LMDB comes through ReservoirLMDB's CLMDB module (the same library and shim).
        .executableTarget(
            name: "lmdb-bench",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirMacros", package: "Reservoir"),
                .product(name: "ReservoirLMDB", package: "Reservoir"),
            ]
        ),
        // What opening an LMDB store costs by size (the page check): no macros, no peers.
        .executableTarget(
            name: "lmdb-open-cost",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirLMDB", package: "Reservoir"),
            ]
        ),
        .executableTarget(
            name: "observation-benchmark",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ],
            path: "Sources/ObservationBenchmark"
        ),
        // The "one-record commit → 1 live subscription notified" row taken apart: when `write`
        // returns, when the value reaches the subscriber, when the waiting side sees it.
        .executableTarget(
            name: "commit-notify-latency",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "ReservoirLMDB", package: "Reservoir"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        // History catch-up from a token (issue #32) beside each engine's raw C API, and the log's
        // bytes per retained change set. Raw LMDB and libpq come through CLMDB and CLibPQ.
        .executableTarget(
            name: "history-catchup",
            dependencies: [
                "BenchSupport",
                "CSQLiteRaw",
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "ReservoirLMDB", package: "Reservoir"),
                .product(name: "ReservoirPostgres", package: "Reservoir"),
            ]
        ),
        // Sync (issue #34): server commit to a live fetch on 1, 10, 50 replicas; first-sync catch-up.
        .executableTarget(
            name: "sync-latency",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "ReservoirPostgres", package: "Reservoir"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        // The benchmarks' error and raw libpq's connection (CLibPQ comes through ReservoirPostgres).
        .target(
            name: "BenchSupport",
            dependencies: [.product(name: "ReservoirPostgres", package: "Reservoir")]
        ),
        // Migrating records (issue #33): Reservoir on each engine beside the same migration by hand
        // (raw SQLite C, raw LMDB C, raw libpq) and GRDB's DatabaseMigrator; time and peak memory.
        .executableTarget(
            name: "migration-bench",
            dependencies: [
                "BenchSupport",
                "CSQLiteRaw",
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "ReservoirLMDB", package: "Reservoir"),
                .product(name: "ReservoirPostgres", package: "Reservoir"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Every workload on every side, same data, one run, one Markdown table: `Benchmarks/run`.
        // Raw libpq comes through ReservoirPostgres's CLibPQ module, as raw LMDB through CLMDB.
        .executableTarget(
            name: "reservoir-bench-table",
            dependencies: [
                "BenchSupport",
                "CSQLiteRaw",
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirMacros", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "ReservoirLMDB", package: "Reservoir"),
                .product(name: "ReservoirPostgres", package: "Reservoir"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
