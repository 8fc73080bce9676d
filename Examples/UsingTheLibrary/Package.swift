// swift-tools-version:6.0
// The README's "Using the library" code as an app would build it: main.swift is the
// README's snippet, word for word (a test checks), and scripts/test builds and runs it.
import PackageDescription

let package = Package(
    name: "UsingTheLibrary",
    platforms: [.macOS(.v14)],  // Foundation's #Predicate
    dependencies: [
        .package(name: "Reservoir", path: "../.."),
        // Combine's API on Linux (on Apple platforms OpenCombineShim is Combine itself).
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
    ],
    targets: [
        .executableTarget(
            name: "UsingTheLibrary",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirMacros", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        // Every other Swift block of the README, compiled but never run: scripts/readme-snippets
        // writes them here from README.md (Snippet<line>.swift, not committed). Snippets leave
        // values unused, as documentation does, so their warnings are not shown.
        .target(
            name: "ReadmeSnippets",
            dependencies: [
                .product(name: "Reservoir", package: "Reservoir"),
                .product(name: "ReservoirMacros", package: "Reservoir"),
                .product(name: "ReservoirSQLite", package: "Reservoir"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ],
            swiftSettings: [.unsafeFlags(["-suppress-warnings"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
