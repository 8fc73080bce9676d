import Foundation
import ReservoirConformance
import Testing

/// `ChildProcess`, through which every test starts a process: a child that has exited is seen
/// to have exited even while something it started still runs with the descriptors it
/// inherited (on Linux, Foundation's `Process` learns of an exit only when they close, so a
/// `pg_ctl start` left the PostgreSQL tests waiting for the server it started).
@Suite("ChildProcess")
struct ChildProcessTests {
    /// A shell that starts a `sleep` in the background (inheriting every descriptor the shell
    /// has but its output), prints the sleep's process id, and ends with `status`.
    private func shellLeavingASleep(exiting status: Int32? = nil) throws -> ChildProcess {
        let end = status.map { "exit \($0)" } ?? "wait"
        return try ChildProcess(URL(fileURLWithPath: "/bin/bash"),
                                ["-c", "sleep 120 >/dev/null 2>&1 & echo $!; \(end)"], standardError: .captured)
    }

    private func stopSleep(printedBy process: ChildProcess) {
        if let line = process.output.first, let pid = Int32(line) { kill(pid, SIGKILL) }
    }

    @Test func anExitIsSeenWhileWhatTheChildStartedStillRuns() async throws {
        let process = try shellLeavingASleep(exiting: 3)
        defer { stopSleep(printedBy: process) }
        // Not killed (nil) but seen to exit with its own status, long before the sleep ends.
        #expect(process.waitUntilExit(within: 60) == 3)
        #expect(!process.isRunning)
        #expect(process.exitStatus == 3)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationSignal == nil)
        #expect(process.output.count == 1)
    }

    @Test func theAsynchronousWaitSeesItToo() async throws {
        let process = try shellLeavingASleep(exiting: 0)
        defer { stopSleep(printedBy: process) }
        #expect(await process.waitForExit(within: 60) == 0)
        #expect(process.exitStatus == 0)
    }

    @Test func aKilledChildIsGoneThoughWhatItStartedRuns() async throws {
        let process = try shellLeavingASleep()
        defer { stopSleep(printedBy: process) }
        #expect(await process.waitForLines(1))
        #expect(process.isRunning)
        process.kill9()
        #expect(!process.isRunning)
        #expect(process.terminationSignal == SIGKILL)
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.exitStatus == nil)
    }
}
