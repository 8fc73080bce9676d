import Foundation
import Reservoir
import ReservoirConformance

/// A PostgreSQL cluster of a test's own, for faults the shared test server must not suffer
/// (a crash, a frozen postmaster): made, started, crashed and restarted on the same port by
/// `scripts/pg-cluster`, the script `scripts/with-postgres` makes the shared one with.
final class PostgresCluster: Sendable {
    let directory: TemporaryDirectory
    /// `postgres://reservoir@127.0.0.1:PORT/postgres`, the same after every restart.
    let url: String
    let port: UInt16

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/pg-cluster").path

    /// Makes and starts a cluster with server `settings` (`NAME=VALUE`; none: PostgreSQL's
    /// defaults, so fsync and synchronous commit).
    init(settings: [String] = []) throws {
        directory = try TemporaryDirectory("reservoir-pgcluster")
        do {
            _ = try Self.run(["init", directory.path])
            let started = try Self.run(["start", directory.path] + settings)
            guard let url = started.last, let port = URLComponents(string: url)?.port.flatMap({ UInt16(exactly: $0) }) else {
                throw ReservoirError(.backend, "pg-cluster start printed no URL: \(started)")
            }
            self.url = url
            self.port = port
        } catch {
            _ = try? Self.run(["stop", directory.path, "immediate"])
            directory.cleanUp()
            throw error
        }
    }

    /// Stops the server: `immediate` is a crash (no checkpoint; recovery at the next start).
    func stop(_ mode: String = "fast") throws {
        _ = try Self.run(["stop", directory.path, mode])
    }

    /// Starts the stopped server again on its port, with its settings; returns once it
    /// accepts connections (after crash recovery).
    func start() throws {
        _ = try Self.run(["start", directory.path])
    }

    /// The postmaster's process id (the first line of `postmaster.pid`), nil when not running.
    var postmasterPID: Int32? {
        guard let text = try? String(contentsOfFile: directory.file("data/postmaster.pid"), encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// Stops the server (a crash: it is thrown away) and removes its directory.
    func remove() {
        _ = try? Self.run(["stop", directory.path, "immediate"])
        directory.cleanUp()
    }

    private static func run(_ arguments: [String]) throws -> [String] {
        let process = try ChildProcess(URL(fileURLWithPath: "/bin/bash"), [script] + arguments, standardError: .captured)
        // Generous: starting waits for crash recovery, on a loaded machine.
        guard let status = process.waitUntilExit(within: 300) else {
            throw ReservoirError(.backend, "pg-cluster \(arguments.joined(separator: " ")) did not finish within 300 s: \(process.errorText)")
        }
        guard status == 0 else {
            throw ReservoirError(.backend, "pg-cluster \(arguments.joined(separator: " ")) failed (\(status)): \(process.errorText)")
        }
        return process.output
    }
}
