import Foundation
import Reservoir
@testable import ReservoirLMDB

/// A fresh temporary directory, removed by `cleanUp`.
struct TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/reservoir-lmdb-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

let lmdbRegistry = BackendRegistry([.lmdb])

func openStore(_ configuration: String) throws -> Store {
    try Store.open(configuration, registry: lmdbRegistry)
}

struct Note: Storable {
    var id: Int
    var title: String
    var priority: Int?
    var score: Double?
    var tag: String?

    static let schema = Schema<Note>("notes", fields: [
        .field(\.id),
        .field(\.title), .field(\.priority, indexed: true), .field(\.score, indexed: true), .field(\.tag),
    ])
}

struct NoteV1: Storable {
    var id: String
    var title: String
    static let schema = Schema<NoteV1>("evolving", fields: [.field(\.title)])
}

struct NoteV2: Storable {
    var id: String
    var title: String
    var rating: Int?
    static let schema = Schema<NoteV2>("evolving", fields: [.field(\.title), .field(\.rating, indexed: true)])
}

/// A running `ReservoirLMDBTestHelper`, whose output lines the test reads as they come.
final class Helper: @unchecked Sendable {
    // @unchecked: `lines` and `buffer` are guarded by `lock`.
    let process = Process()
    private let lock = NSLock()
    private var lines: [String] = []
    private var buffer = Data()

    /// The helper built beside the test bundle.
    static var executable: URL {
        get throws {
            var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            for _ in 0..<3 {
                let candidate = directory.appendingPathComponent("ReservoirLMDBTestHelper")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
            throw ReservoirError(.cannotOpen, "ReservoirLMDBTestHelper not found near \(CommandLine.arguments[0]); build with swift build --build-tests")
        }
    }

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = try Self.executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock()
            self.buffer.append(data)
            while let newline = self.buffer.firstIndex(of: 0x0A) {
                self.lines.append(String(decoding: self.buffer[self.buffer.startIndex..<newline], as: UTF8.self))
                self.buffer.removeSubrange(self.buffer.startIndex...newline)
            }
            self.lock.unlock()
        }
        try process.run()
    }

    var output: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }

    /// Waits until a line satisfying `predicate` arrives, or `seconds` pass.
    func waitForLine(within seconds: Double = 20, _ predicate: (String) -> Bool) async -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let line = output.first(where: predicate) { return line }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return output.first(where: predicate)
    }

    /// Waits for the process to exit (at most `seconds`); kills it if it does not.
    func waitForExit(within seconds: Double = 30) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
