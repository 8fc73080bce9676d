// swift-tools-version:6.0
import PackageDescription

// Run on purpose, never as a test:  cd Benchmarks/LMDB && swift run -c release lmdb-bench
let package = Package(
    name: "ReservoirLMDBBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "Reservoir", path: "../..")],
    targets: [
        .executableTarget(
            name: "lmdb-bench",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirMacros", package: "Reservoir"),
                .product(name: "ReservoirLMDB", package: "Reservoir"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
