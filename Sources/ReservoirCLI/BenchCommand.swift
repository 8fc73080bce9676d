import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir
import ReservoirMacros

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Time store operations and live subscriptions on one backend, or on every built-in one.",
        discussion: """
            Without --store it runs on memory:, a temporary SQLite file and a temporary LMDB
            environment, and removes them afterwards. Build with -c release for real figures.

            Example: reservoir bench --records 20000
            """
    )
    @Option(name: .long, help: ArgumentHelp("The store to measure (default: every built-in backend, in temporary files).", valueName: "URL"))
    var store: String?
    @Option(help: "How many records to write and read.") var records = 10_000

    func validate() throws {
        if records < 1 { throw ValidationError("--records \(records) is not a positive count") }
    }

    func run() throws {
        try reporting {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let targets = store.map { [$0] } ?? Backends.scratchConfigurations(in: scratch.directory)
            let progress = Progress(enabled: isTerminal(STDERR_FILENO))
            var rows: [(String, [Measurement])] = []
            for (index, configuration) in targets.enumerated() {
                let store = try Store.open(configuration, registry: Backends.registry)
                defer { store.close() }
                rows.append((StoreConfiguration.redact(configuration, secretsOf: [configuration]), try BenchRun(store: store, records: records) { step in
                    progress.show("\(StoreConfiguration.redact(configuration, secretsOf: [configuration])): \(step)", index, targets.count)
                }.measure()))
            }
            progress.finish()
            print("reservoir bench, \(records) records\n")
            let names = rows.first?.1.map(\.name) ?? []
            print("operation".padding(toLength: 42, withPad: " ", startingAt: 0) + rows.map { $0.0.prefix(22).padding(toLength: 24, withPad: " ", startingAt: 0) }.joined())
            for (i, name) in names.enumerated() {
                print(name.padding(toLength: 42, withPad: " ", startingAt: 0) + rows.map { $0.1[i].text.padding(toLength: 24, withPad: " ", startingAt: 0) }.joined())
            }
        }
    }
}

struct Measurement {
    let name: String
    let seconds: Double
    let operations: Int

    var text: String {
        let each = seconds / Double(operations)
        let total = seconds >= 1 ? String(format: "%.2f s", seconds) : String(format: "%.1f ms", seconds * 1000)
        guard operations > 1 else { return total }
        return total + (each >= 0.001 ? String(format: " (%.2f ms/op)", each * 1000) : String(format: " (%.1f µs/op)", each * 1_000_000))
    }
}

/// A record for benchmarks, stored as type `bench_items`; `@RowMapped`, as apps that care
/// about speed declare their records (issue #20 states its targets for such records).
@RowMapped
struct BenchItem: Storable {
    var id: Int
    var name: String
    var value: Double
    var group: Int
    static let schema = Schema<BenchItem>("bench_items", fields: [.field(\.name), .field(\.value), .field(\.group, indexed: true)])
}

struct BenchRun {
    let store: Store
    let records: Int
    let step: (String) -> Void

    func measure() throws -> [Measurement] {
        var results: [Measurement] = []
        var random = SystemRandomNumberGenerator()
        let items = (0..<records).map { BenchItem(id: $0, name: "item \($0)", value: Double.random(in: 0..<1, using: &random), group: $0 % 100) }

        step("bulk insert")
        results.append(try time("bulk insert (one transaction)", records) {
            try store.write { tx in for item in items { try tx.insert(item) } }
        })
        step("fetch all sorted")
        results.append(try time("fetch all, sorted by value", 1) {
            guard try store.fetch(FetchRequest<BenchItem>(sortBy: [.ascending(\.value)])).count == records else {
                throw CommandFailure("fetch returned the wrong number of records")
            }
        })
        step("point reads")
        let reads = min(records, 100_000)
        results.append(try time("point reads (get by id)", reads) {
            try store.read { snapshot in
                for i in 0..<reads where try snapshot.get(BenchItem.self, id: (i &* 7919) % records) == nil {
                    throw CommandFailure("record \((i &* 7919) % records) is missing")
                }
            }
        })
        let commits = 1000
        step("single-record commits")
        results.append(try time("single-record commits", commits) {
            for i in 0..<commits {
                try store.write { tx in try tx.update(BenchItem(id: i % records, name: "updated \(i)", value: Double(i), group: i % 100)) }
            }
        })
        step("live subscription")
        let received = Locked(0)
        let subscription = store.differencesPublisher(for: FetchRequest<BenchItem>(where: \.group < 50, sortBy: [.ascending(\.value)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { _ in received.withLock { $0 += 1 } })
        defer { subscription.cancel() }
        let updates = 200
        results.append(try time("commit until a live fetch has its diff", updates) {
            for i in 0..<updates {
                let before = received.withLock { $0 }
                try store.write { tx in try tx.update(BenchItem(id: (i * 31) % records, name: "live \(i)", value: Double.random(in: 0..<1, using: &random), group: (i * 31) % 50)) }
                guard received.withLock({ $0 }) == before + 1 else { throw CommandFailure("the live fetch missed commit \(i)") }
            }
        })
        return results
    }

    private func time(_ name: String, _ operations: Int, _ body: () throws -> Void) throws -> Measurement {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Measurement(name: name, seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, operations: operations)
    }
}

/// A temporary directory for scratch stores, removed afterwards.
struct Scratch {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("reservoir-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw CommandFailure("cannot create a temporary directory at \(directory.path): \(error.localizedDescription)")
        }
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}
