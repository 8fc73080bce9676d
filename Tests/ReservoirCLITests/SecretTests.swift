import Foundation
import ReservoirConformance
import Testing

/// A password in a `postgres://` configuration string never reaches anything the tool prints:
/// `info`, `info --json`, `latency`, and the error for a malformed string (issue #30, item 4).
@Suite("reservoir command-line tool: secrets", .serialized)
struct SecretTests {
    static let password = "Sekr1tPw"

    /// The test server's URL with a password added (the throwaway server trusts every
    /// connection, so any password is accepted) and a schema of its own.
    private func storeWithPassword() throws -> String? {
        guard let server = ProcessInfo.processInfo.environment["RESERVOIR_TEST_POSTGRES"], !server.isEmpty,
              var components = URLComponents(string: server) else {
            Issue.record("RESERVOIR_TEST_POSTGRES is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL server")
            return nil
        }
        components.password = Self.password
        guard let url = components.string else { return nil }
        let schema = "cli_secret_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        return url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
    }

    private func expectHidden(_ result: (status: Int32, output: String, errors: String), _ what: String) {
        #expect(!result.output.contains(Self.password), "\(what) printed the password on stdout: \(result.output)")
        #expect(!result.errors.contains(Self.password), "\(what) printed the password on stderr: \(result.errors)")
    }

    @Test("info and info --json show the store with its password hidden")
    func info() async throws {
        guard let store = try storeWithPassword() else { return }
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let added = try await CLIProcess.run(["todo", "add", "secret test", "--store", store], in: scratch.url)
        #expect(added.status == 0, "\(added.errors)")
        let lines = try await CLIProcess.run(["info", "--store", store], in: scratch.url)
        #expect(lines.status == 0, "\(lines.errors)")
        #expect(lines.output.contains("store:") && lines.output.contains(":***@"), "the store line names the store, password as ***: \(lines.output)")
        expectHidden(lines, "info")
        let json = try await CLIProcess.run(["info", "--json", "--store", store], in: scratch.url)
        #expect(json.status == 0, "\(json.errors)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.output)")
        #expect((object["store"] as? String)?.contains(":***@") == true, "\(json.output)")
        expectHidden(json, "info --json")
    }

    @Test("latency reports on the store with its password hidden")
    func latency() async throws {
        guard let store = try storeWithPassword() else { return }
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let result = try await CLIProcess.run(["latency", "--store", store, "--commits", "3"], in: scratch.url)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("commits"), "\(result.output)")
        expectHidden(result, "latency")
    }

    @Test("malformed strings are refused without showing the password", arguments: [
        // libpq quotes the whole URI it was given in these messages.
        "postgres://app:Sekr1tPw@127.0.0.1:5432/app?sslmode=bogus",
        "postgres://app:Sekr1tPw@127.0.0.1:5432/app%zz",
        "postgres://app:Sekr1tPw@127.0.0.1:5432/app?application_name=%",
        // Unescaped @, / and ? in the password: libpq would cut the password there and read
        // the rest as the host or the port.
        "postgres://app:ab@Sekr1tPw@127.0.0.1/app",
        "postgres://app:Sekr/1tPw@127.0.0.1/app",
        "postgres://app:Sekr?1tPw@127.0.0.1/app",
        "postgres://app:Sekr1tPw@127.0.0.1:notaport/app",
        "postgres://127.0.0.1/app?password=Sekr1tPw&sslmode=bogus",
    ])
    func malformed(_ store: String) async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        for command in [["info"], ["info", "--json"], ["todo", "list"]] {
            let result = try await CLIProcess.run(command + ["--store", store], in: scratch.url)
            #expect(result.status != 0, "\(command) on \(store) should fail")
            #expect(!result.errors.isEmpty, "an error is printed")
            // The parts around a / or ? are hidden too, not only the whole.
            for piece in ["Sekr1tPw", "Sekr", "1tPw"] {
                #expect(!result.errors.contains(piece) && !result.output.contains(piece), "\(command) on a malformed string showed \(piece): \(result.errors)")
            }
        }
    }
}
