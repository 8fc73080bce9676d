// swift-tools-version:6.0
// Benchmarks, run on purpose, never as tests:
//     cd Benchmarks && swift run -c release reservoir-sqlite-bench
import PackageDescription

let package = Package(
    name: "ReservoirBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Reservoir", path: ".."),
        // For comparison only: a widely used Swift SQLite library, with Codable records.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
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
    ],
    swiftLanguageModes: [.v6]
)
