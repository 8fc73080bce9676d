import Foundation
import Reservoir
import ReservoirPostgres

/// The PostgreSQL server the tests use: `RESERVOIR_TEST_POSTGRES`, which `scripts/test`
/// (through `scripts/with-postgres`) sets to a throwaway cluster it starts. Without it every
/// PostgreSQL test fails with a message saying what to do; none is skipped silently.
enum TestServer {
    static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["RESERVOIR_TEST_POSTGRES"], !url.isEmpty else {
            throw ReservoirError(.cannotOpen, """
                RESERVOIR_TEST_POSTGRES is not set, so there is no PostgreSQL server to test against. \
                Run the tests with scripts/test (or scripts/with-postgres swift test), which starts a throwaway \
                server (needs PostgreSQL's server installed: apt-get install postgresql, or brew install postgresql), \
                or set RESERVOIR_TEST_POSTGRES=postgres://USER@HOST:PORT/DATABASE to use a server you run
                """)
        }
        return url
    }

    /// A configuration string for a new store in a schema of its own, with `options` added.
    static func freshStore(_ options: String = "") throws -> String {
        let base = try url()
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        let separator = base.contains("?") ? "&" : "?"
        return base + separator + "schema=\(schema)" + (options.isEmpty ? "" : "&" + options)
    }

    static func drop(_ configuration: String) {
        try? PostgresBackend.dropStore(configuration)
    }

    static let registry = BackendRegistry([.postgres, .postgresql])
}
