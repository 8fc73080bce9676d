import Foundation
import Reservoir

/// PostgreSQL's `psql` client, for tests that write as another application would: a
/// PostgreSQL-speaking backend's tests (ours, or a third party's) and the CLI's.
public enum PSQL {
    /// Runs `sql` through `psql` against the server `url` names (a libpq URI), stopping at
    /// the first error. Throws naming psql's message when it fails, or what to install when
    /// psql is missing.
    public static func run(_ sql: String, on url: String) throws {
        _ = try output(of: sql, on: url, arguments: [])
    }

    /// The rows `sql` returns, one string a row (psql's unaligned `-At` form: fields joined
    /// by `|`); otherwise as ``run(_:on:)``.
    public static func rows(_ sql: String, on url: String) throws -> [String] {
        try output(of: sql, on: url, arguments: ["-At"])
    }

    private static func output(of sql: String, on url: String, arguments: [String]) throws -> [String] {
        let candidates = ["/usr/bin/psql", "/usr/local/bin/psql", "/opt/homebrew/bin/psql"]
            + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).map { "/usr/lib/postgresql/\($0)/bin/psql" }
        guard let psql = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw ReservoirError(.backend, "psql not found; install PostgreSQL's client (apt-get install postgresql-client)")
        }
        let process = try ChildProcess(URL(fileURLWithPath: psql), [url, "-X", "-q"] + arguments + ["-v", "ON_ERROR_STOP=1", "-c", sql],
                                       standardError: .captured)
        guard let status = process.waitUntilExit(within: 120) else {
            throw ReservoirError(.backend, "psql did not finish within 120 s and was killed: \(process.errorText)")
        }
        guard status == 0 else {
            throw ReservoirError(.backend, "psql failed: \(process.errorText)")
        }
        return process.output
    }
}
