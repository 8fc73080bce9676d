// swift-tools-version:6.0
// Observation benchmark, run on purpose (never by the test suite):
//   cd Benchmarks/Observation && swift run -c release observation-benchmark
import Foundation
import PackageDescription

// A path dependency's identity is its folder's name, whatever the clone is called.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "ObservationBenchmark",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
    ],
    targets: [
        .executableTarget(
            name: "observation-benchmark",
            dependencies: [
                .product(name: "Reservoir", package: rootIdentity),
                .product(name: "ReservoirSQLite", package: rootIdentity),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ],
            path: "Sources/ObservationBenchmark"
        ),
    ],
    swiftLanguageModes: [.v6]
)
