// swift-tools-version:6.0
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Reservoir",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "Reservoir", targets: ["Reservoir"]),
        .library(name: "ReservoirConformance", targets: ["ReservoirConformance"]),
        .library(name: "ReservoirSQLite", targets: ["ReservoirSQLite"]),
        .library(name: "ReservoirLMDB", targets: ["ReservoirLMDB"]),
        .library(name: "ReservoirPostgres", targets: ["ReservoirPostgres"]),
        .library(name: "ReservoirMacros", targets: ["ReservoirMacros"]),
        .executable(name: "reservoir", targets: ["ReservoirCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", "600.0.0"..<"604.0.0"),
        // `swift package generate-documentation --target Reservoir`: a command plugin, built only when run.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "Reservoir",
            dependencies: [
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "HashTreeCollections", package: "swift-collections"),
            ]
        ),
        .target(
            name: "ReservoirConformance",
            dependencies: ["Reservoir", .product(name: "OpenCombineShim", package: "OpenCombine")]
        ),
        // `@Storable` and `@RowMapped`, a separate product so that only apps using them build swift-syntax.
        .macro(
            name: "ReservoirMacroPlugin",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "ReservoirMacros", dependencies: ["Reservoir", "ReservoirMacroPlugin"]),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .target(name: "ReservoirSQLite", dependencies: ["Reservoir", "CSQLite"]),
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(name: "ReservoirLMDB", dependencies: ["Reservoir", "CLMDB"]),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // Written only against Reservoir's public API, as a third-party backend would be.
        .target(name: "ReservoirPostgres", dependencies: ["Reservoir", "CLibPQ"]),
        .executableTarget(
            name: "ReservoirCLI",
            dependencies: [
                "Reservoir",
                "ReservoirMacros",
                "ReservoirSQLite",
                "ReservoirLMDB",
                "ReservoirPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        .testTarget(
            name: "ReservoirTests",
            dependencies: [
                "Reservoir",
                "ReservoirConformance",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // Records a test target and its helper process both store, defined once.
        .target(name: "ReservoirTestRecords", dependencies: ["Reservoir"], path: "Tests/ReservoirTestRecords"),
        // Each test target that needs a second process has its helper executable beside it,
        // named Reservoir<Suite>TestHelper and started through ReservoirConformance's ChildProcess.
        .executableTarget(
            name: "ReservoirSQLiteTestHelper",
            dependencies: ["ReservoirSQLite", "Reservoir", "CSQLite"],
            path: "Tests/ReservoirSQLiteTestHelper"
        ),
        .testTarget(
            name: "ReservoirSQLiteTests",
            dependencies: [
                "ReservoirSQLite", "ReservoirConformance", "Reservoir", "CSQLite", "ReservoirSQLiteTestHelper",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        .testTarget(
            name: "ReservoirMacrosTests",
            dependencies: [
                "ReservoirMacros",
                "ReservoirMacroPlugin",
                "Reservoir",
                // @Storable records stored, fetched and observed on every built-in backend.
                "ReservoirConformance", "ReservoirSQLite", "ReservoirLMDB", "ReservoirPostgres",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(name: "ReservoirCLITests", dependencies: ["ReservoirCLI", "CSQLite", "ReservoirConformance", "Reservoir", "ReservoirSQLite", "ReservoirLMDB"]),
        // Fault tests: SIGKILLs during commits (in the helper below), damaged files.
        .executableTarget(
            name: "ReservoirFaultTestHelper",
            dependencies: ["Reservoir", "ReservoirConformance", "ReservoirSQLite", "ReservoirLMDB"],
            path: "Tests/ReservoirFaultTestHelper"
        ),
        .testTarget(
            name: "ReservoirFaultTests",
            dependencies: ["Reservoir", "ReservoirConformance", "ReservoirSQLite", "ReservoirLMDB", "ReservoirFaultTestHelper"]
        ),
        // The stateful differential test and the query fuzzer, on every built-in backend at once.
        .testTarget(
            name: "ReservoirDifferentialTests",
            dependencies: ["Reservoir", "ReservoirConformance", "ReservoirSQLite", "ReservoirLMDB", "ReservoirPostgres", "CSQLite"]
        ),
        // The conformance suite and the multi-client tests against a PostgreSQL server
        // (scripts/with-postgres starts a throwaway one unless RESERVOIR_TEST_POSTGRES names one).
        .executableTarget(
            name: "ReservoirPostgresTestHelper",
            dependencies: ["ReservoirPostgres", "ReservoirSQLite", "ReservoirLMDB", "Reservoir", "ReservoirConformance", "ReservoirTestRecords",
                           .product(name: "OpenCombineShim", package: "OpenCombine")],
            path: "Tests/ReservoirPostgresTestHelper"
        ),
        .testTarget(
            name: "ReservoirPostgresTests",
            dependencies: [
                "ReservoirPostgres", "ReservoirSQLite", "ReservoirLMDB", "ReservoirConformance", "Reservoir", "ReservoirPostgresTestHelper",
                "ReservoirTestRecords",
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        // Certification proved: a small file backend written against the public SPI alone, with
        // bugs that can be planted one at a time; each must fail `Certification`, none must pass.
        .target(name: "ReservoirPlantedBackend", dependencies: ["Reservoir"], path: "Tests/ReservoirPlantedBackend"),
        // The crash child, named as the DocC article "Writing a backend" names it, so the
        // article's sample (Tests/ReservoirCertificationTests/WritingABackendSample.swift) runs as written.
        .executableTarget(
            name: "MineCrashChild",
            dependencies: ["ReservoirPlantedBackend", "ReservoirConformance", "Reservoir"],
            path: "Tests/ReservoirCertificationTestHelper"
        ),
        .testTarget(
            name: "ReservoirCertificationTests",
            dependencies: ["ReservoirPlantedBackend", "ReservoirConformance", "Reservoir", "MineCrashChild"]
        ),
        .executableTarget(
            name: "ReservoirLMDBTestHelper",
            dependencies: ["ReservoirLMDB", "ReservoirTestRecords", "CLMDB"],
            path: "Tests/ReservoirLMDBTestHelper"
        ),
        .testTarget(
            name: "ReservoirLMDBTests",
            dependencies: [
                "ReservoirLMDB",
                "ReservoirConformance",
                "Reservoir",
                "ReservoirLMDBTestHelper",
                "ReservoirTestRecords",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
