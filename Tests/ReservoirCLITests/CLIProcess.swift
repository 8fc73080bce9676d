import Foundation

/// The `reservoir` binary run as a user would: a child process whose output is read as it
/// comes, with every wait bounded in time.
final class CLIProcess: @unchecked Sendable {
    // @unchecked: the buffers are guarded by `lock`.
    private let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()

    /// The built `reservoir` executable, next to the test bundle.
    static func binary() throws -> URL {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("reservoir")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw CLIError("the reservoir binary was not found near the test bundle; run swift build first")
    }

    init(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws {
        process.executableURL = try Self.binary()
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var env = ProcessInfo.processInfo.environment
        env["RESERVOIR_STORE"] = nil
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        stdout.fileHandleForReading.readabilityHandler = { [weak self] handle in self?.append(handle.availableData, toError: false) }
        stderr.fileHandleForReading.readabilityHandler = { [weak self] handle in self?.append(handle.availableData, toError: true) }
        try process.run()
    }

    private func append(_ data: Data, toError: Bool) {
        lock.lock()
        if toError { err.append(data) } else { out.append(data) }
        lock.unlock()
    }

    var output: String { lock.lock(); defer { lock.unlock() }; return String(decoding: out, as: UTF8.self) }
    var errors: String { lock.lock(); defer { lock.unlock() }; return String(decoding: err, as: UTF8.self) }
    var lines: [String] { output.split(separator: "\n").map(String.init) }

    /// Waits until the process has printed at least `count` lines.
    func waitForLines(_ count: Int, seconds: Double = 15) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while lines.count < count {
            guard Date() < deadline, process.isRunning || lines.count >= count else {
                throw CLIError("expected \(count) lines within \(seconds) s, got \(lines.count): \(output) \(errors)")
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    /// Waits for the process to exit; returns its status.
    @discardableResult
    func waitForExit(seconds: Double = 60) async throws -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning {
            guard Date() < deadline else {
                process.terminate()
                throw CLIError("reservoir \(process.arguments ?? []) did not exit within \(seconds) s; output: \(output) \(errors)")
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        try await Task.sleep(nanoseconds: 20_000_000)  // let the last output arrive
        return process.terminationStatus
    }

    func interrupt() { process.interrupt() }

    /// Runs `reservoir arguments` to completion; returns status, stdout and stderr.
    static func run(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) async throws -> (status: Int32, output: String, errors: String) {
        let child = try CLIProcess(arguments, in: directory, environment: environment)
        let status = try await child.waitForExit()
        return (status, child.output, child.errors)
    }
}

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A temporary directory removed at the end of a test.
struct Scratch {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("reservoir-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func remove() { try? FileManager.default.removeItem(at: url) }
}
