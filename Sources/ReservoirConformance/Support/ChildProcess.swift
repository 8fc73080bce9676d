import Foundation

/// A second process for tests: an executable started with arguments, its standard output
/// (and, when asked, its standard error) collected as it arrives, killed or awaited. Every
/// test that starts a process starts it through this type.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: the buffers, `lines`, the end-of-file flags and `observedEnding` are guarded by `lock`;
    // `process` is used from the creating task only.
    private let process = Process()
    private let lock = NSLock()
    private var lines: [String] = []
    private var buffer = Data()
    private var allOutput = Data()
    private var allErrors = Data()
    private var outputEnded = false
    private var errorsEnded = true
    private var observedEnding: Ending?

    /// Where the child's standard error goes.
    public enum StandardError: Sendable {
        /// To this process's standard error (the test log).
        case inherited
        /// To a file (a crashing child's last words, read after it died).
        case file(URL)
        /// Into memory, read with `errorText`.
        case captured
    }

    /// The executable called `name` built by SwiftPM into the same products directory as the
    /// running tests. On Linux the test binary is itself in that directory; on Apple
    /// platforms the tests run inside an `.xctest` bundle (loaded by `xctest` or
    /// `swiftpm-testing-helper`) that sits in it, so both the running binary and the
    /// loaded bundles are asked, never `/proc`.
    public static func builtExecutable(_ name: String) throws -> URL {
        var starts: [URL] = []
        if let bundle = Bundle.allBundles.first(where: { $0.bundleURL.pathExtension == "xctest" }) {
            starts.append(bundle.bundleURL.deletingLastPathComponent())
        }
        starts.append(Bundle.main.executableURL?.resolvingSymlinksInPath().deletingLastPathComponent()
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        starts.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        for start in starts {
            // The directory itself or one of the three above it (a test bundle's binary is
            // nested in `X.xctest/Contents/MacOS/`).
            var directory = start
            for _ in 0..<4 {
                let candidate = directory.appendingPathComponent(name)
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
        }
        throw ConformanceFailure(message: "the executable \(name) was not found near \(starts.map(\.path)); build it with swift build --build-tests", file: #fileID, line: #line)
    }

    /// Starts `executable` with `arguments`, in this process's environment without the
    /// variables named in `removing`, plus `environment`; standard input is empty.
    public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
                standardError: StandardError = .inherited, in directory: URL? = nil) throws {
        process.executableURL = executable
        process.arguments = arguments
        var inherited = ProcessInfo.processInfo.environment
        for name in removing { inherited[name] = nil }
        process.environment = inherited.merging(environment) { _, new in new }
        process.standardInput = FileHandle.nullDevice
        if let directory { process.currentDirectoryURL = directory }
        switch standardError {
        case .inherited:
            break
        case let .file(url):
            _ = FileManager.default.createFile(atPath: url.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: url)
        case .captured:
            errorsEnded = false
            let pipe = Pipe()
            process.standardError = pipe
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        Self.drain(pipe) { [weak self] in self?.receiveOutput($0) }
        if case .captured = standardError, let errors = process.standardError as? Pipe {
            Self.drain(errors) { [weak self] in self?.receiveErrors($0) }
        }
    }

    /// Reads `pipe` on a thread of its own until the end of the stream (an empty read, also
    /// handed to `receive`). Not `readabilityHandler`: on Linux its dispatch read source, torn
    /// down as the handle closes, can leave a dangling epoll registration that crashes
    /// libdispatch's manager thread (`_dispatch_event_loop_drain`, signal 11), which a test run
    /// starting hundreds of processes met. A blocking read has nothing to tear down.
    private static func drain(_ pipe: Pipe, _ receive: @escaping @Sendable (Data) -> Void) {
        let handle = pipe.fileHandleForReading
        let thread = Thread {
            while true {
                let data = handle.availableData
                receive(data)
                if data.isEmpty { return }
            }
        }
        thread.start()
    }

    /// Starts the executable `name` built beside the tests (see `builtExecutable`).
    public convenience init(built name: String, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
                            standardError: StandardError = .inherited, in directory: URL? = nil) throws {
        try self.init(Self.builtExecutable(name), arguments, environment: environment, removing: removing,
                      standardError: standardError, in: directory)
    }

    private func receiveOutput(_ data: Data) {
        lock.lock()
        defer { lock.unlock() }
        // An empty read: the child and everything it started have closed the stream.
        guard !data.isEmpty else {
            outputEnded = true
            return
        }
        allOutput.append(data)
        buffer.append(data)
        while let newline = buffer.firstIndex(of: 0x0A) {
            lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
            buffer.removeSubrange(buffer.startIndex...newline)
        }
    }

    private func receiveErrors(_ data: Data) {
        lock.lock()
        defer { lock.unlock() }
        guard !data.isEmpty else {
            errorsEnded = true
            return
        }
        allErrors.append(data)
    }

    /// The complete lines printed so far.
    public var output: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }

    /// Everything printed to standard output so far, an unfinished last line included.
    public var outputText: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: allOutput, as: UTF8.self)
    }

    /// Everything printed to standard error so far, when it is `.captured` (else empty).
    public var errorText: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: allErrors, as: UTF8.self)
    }

    /// The arguments the process was started with.
    public var arguments: [String] { process.arguments ?? [] }

    /// How a process ended.
    private struct Ending {
        let reason: Process.TerminationReason
        let status: Int32
    }

    /// How the process ended, nil while it runs. Foundation's `Process` on Linux learns of
    /// the end only when every holder of a socket the child inherits has closed it, so a
    /// server the child started and left running (`pg_ctl start`) can keep `isRunning` true
    /// long after the child itself exited; then the kernel is asked, without reaping the
    /// child (`WNOWAIT`), so that Foundation still reaps it and agrees later.
    private var ending: Ending? {
        if !process.isRunning {
            return Ending(reason: process.terminationReason, status: process.terminationStatus)
        }
        lock.lock()
        defer { lock.unlock() }
        if let observedEnding { return observedEnding }
        var info = siginfo_t()
        let pid = process.processIdentifier
        guard pid > 0, waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return nil }
        #if canImport(Glibc)
        let (ended, status) = (info._sifields._sigchld.si_pid, info._sifields._sigchld.si_status)
        #else
        let (ended, status) = (info.si_pid, info.si_status)
        #endif
        // No child has ended yet: `waitid` with `WNOHANG` leaves the process id zero.
        guard ended == pid else { return nil }
        let reason: Process.TerminationReason = info.si_code == CLD_EXITED ? .exit : .uncaughtSignal
        observedEnding = Ending(reason: reason, status: status)
        return observedEnding
    }

    /// Whether the process is still running.
    public var isRunning: Bool { ending == nil }

    /// How the process ended: an exit, or a signal (`.exit` while it still runs).
    public var terminationReason: Process.TerminationReason { ending?.reason ?? .exit }

    /// The exit status or the number of the ending signal (-1 while it still runs).
    public var terminationStatus: Int32 { ending?.status ?? -1 }

    /// The signal that ended the process, once it has ended by one.
    public var terminationSignal: Int32? {
        guard let ending, ending.reason == .uncaughtSignal else { return nil }
        return ending.status
    }

    /// The process's exit status, once it has exited normally.
    public var exitStatus: Int32? {
        guard let ending, ending.reason == .exit else { return nil }
        return ending.status
    }

    /// Whether the process has ended and all it printed has been read.
    private var isFinished: Bool {
        guard ending != nil else { return false }
        lock.lock()
        defer { lock.unlock() }
        return outputEnded && errorsEnded
    }

    /// Waits until a line satisfying `predicate` has been printed, or `seconds` pass, or
    /// the process has ended without printing it.
    public func waitForLine(within seconds: Double = 20, _ predicate: (String) -> Bool) async -> String? {
        _ = await eventually(timeout: .seconds(seconds)) { output.contains(where: predicate) || isFinished }
        return output.first(where: predicate)
    }

    /// Waits until at least `count` complete lines have been printed, or `seconds` pass,
    /// or the process has ended; whether they were.
    public func waitForLines(_ count: Int, within seconds: Double = 15) async -> Bool {
        _ = await eventually(timeout: .seconds(seconds)) { output.count >= count || isFinished }
        return output.count >= count
    }

    /// Sends SIGINT, as Control-C would.
    public func interrupt() { process.interrupt() }

    /// SIGKILLs the process (if it still runs) and waits for it to be gone (at most 60 s: a
    /// process in an uninterruptible wait can outlive its SIGKILL for a while).
    public func kill9() {
        if isRunning { kill(process.processIdentifier, SIGKILL) }
        let deadline = Date().addingTimeInterval(60)
        while isRunning && Date() < deadline { usleep(1_000) }
    }

    /// Waits for the process to exit, at most `seconds`, then kills it; its exit status (or
    /// ending signal), or nil when it had to be killed. On return all the process printed
    /// has been read (unless something it started still holds its output open).
    public func waitForExit(within seconds: Double = 30) async -> Int32? {
        _ = await eventually(timeout: .seconds(seconds)) { !isRunning }
        guard let ending else {
            kill9()
            return nil
        }
        _ = await eventually(timeout: .seconds(2)) { isFinished }
        return ending.status
    }

    /// ``waitForExit(within:)`` for synchronous callers (``PSQL``, a test running `mount`):
    /// blocks the calling thread until the process exits, at most `seconds`, then kills it;
    /// its exit status (or ending signal), or nil when it had to be killed. On return all the
    /// process printed has been read, or 2 s have passed since it exited.
    public func waitUntilExit(within seconds: Double = 30) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning && Date() < deadline { usleep(1_000) }
        guard let ending else {
            kill9()
            return nil
        }
        let drained = Date().addingTimeInterval(2)
        while !isFinished && Date() < drained { usleep(1_000) }
        return ending.status
    }
}
