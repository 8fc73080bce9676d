import Foundation

/// A second process for tests: an executable started with arguments, its standard output
/// collected line by line as it arrives, killed or awaited.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `lines` and `buffer` are guarded by `lock`; `process` is used from the
    // creating task only.
    private let process = Process()
    private let lock = NSLock()
    private var lines: [String] = []
    private var buffer = Data()

    /// The executable called `name` in the directory of the running test binary or one of
    /// the three above it (where SwiftPM puts a package's executables beside its tests).
    public static func builtExecutable(_ name: String) throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw ConformanceFailure(message: "the executable \(name) was not found near \(CommandLine.arguments[0]); build it with swift build --build-tests", file: #fileID, line: #line)
    }

    /// Starts `executable` with `arguments`; its standard error goes to the file
    /// `standardError` when given (a crashing child's last words), else to this process's.
    public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], standardError: URL? = nil) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        if let standardError {
            _ = FileManager.default.createFile(atPath: standardError.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: standardError)
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            lock.lock()
            buffer.append(data)
            while let newline = buffer.firstIndex(of: 0x0A) {
                lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                buffer.removeSubrange(buffer.startIndex...newline)
            }
            lock.unlock()
        }
        try process.run()
    }

    /// The complete lines printed so far.
    public var output: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }

    public var isRunning: Bool { process.isRunning }

    /// The signal that ended the process, once it has ended by one.
    public var terminationSignal: Int32? {
        guard !process.isRunning, process.terminationReason == .uncaughtSignal else { return nil }
        return process.terminationStatus
    }

    /// The process's exit status, once it has exited normally.
    public var exitStatus: Int32? {
        guard !process.isRunning, process.terminationReason == .exit else { return nil }
        return process.terminationStatus
    }

    /// Waits until a line satisfying `predicate` has been printed, or `seconds` pass.
    public func waitForLine(within seconds: Double = 20, _ predicate: (String) -> Bool) async -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let line = output.first(where: predicate) { return line }
            if !process.isRunning { break }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return output.first(where: predicate)
    }

    /// SIGKILLs the process (if it still runs) and waits for it to be gone.
    public func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Waits for the process to exit, at most `seconds`, then kills it; its exit status, or
    /// nil when it had to be killed.
    public func waitForExit(within seconds: Double = 30) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline {
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        if process.isRunning {
            kill9()
            return nil
        }
        return process.terminationStatus
    }
}
