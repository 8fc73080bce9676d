import CSQLite
import Foundation
import ReservoirConformance

/// The `reservoir` binary run as a user would, through the shared `ChildProcess`: no
/// `RESERVOIR_STORE` from the test's environment, standard error kept apart, and every wait
/// bounded in time and throwing with what the tool printed.
final class CLIProcess: Sendable {
    private let child: ChildProcess

    init(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws {
        child = try ChildProcess(built: "reservoir", arguments, environment: environment, removing: ["RESERVOIR_STORE"],
                                 standardError: .captured, in: directory)
    }

    var output: String { child.outputText }
    var errors: String { child.errorText }
    var lines: [String] { output.split(separator: "\n").map(String.init) }

    /// Waits until the process has printed at least `count` lines.
    func waitForLines(_ count: Int, seconds: Double = 15) async throws {
        guard await child.waitForLines(count, within: seconds) else {
            throw CLIError("expected \(count) lines within \(seconds) s, got \(lines.count): \(output) \(errors)")
        }
    }

    /// Waits for the process to exit; returns its status.
    @discardableResult
    func waitForExit(seconds: Double = 60) async throws -> Int32 {
        guard let status = await child.waitForExit(within: seconds) else {
            throw CLIError("reservoir \(child.arguments) did not exit within \(seconds) s; output: \(output) \(errors)")
        }
        return status
    }

    func interrupt() { child.interrupt() }

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

/// A write by another SQLite client, not through Reservoir.
func plainSQL(_ path: String, _ sql: String) throws {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { throw CLIError("cannot open \(path)") }
    defer { sqlite3_close(db) }
    sqlite3_busy_timeout(db, 5000)
    guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
        throw CLIError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
    }
}
