import Reservoir
import Testing

/// `StoreConfiguration.redact(_:secretsOf:)`, the one function every message, `info` line and
/// JSON field holding a configuration goes through (issue #30, item 4).
@Suite("redacting secrets")
struct RedactionTests {
    @Test("the password of a URI authority is hidden, wherever the URI is in the text", arguments: [
        ("postgres://app:hunter2@db/app", "postgres://app:***@db/app"),
        ("postgresql://app:hunter2@db:5432/app?sslmode=require", "postgresql://app:***@db:5432/app?sslmode=require"),
        ("invalid URI \"postgresql://app:hunter2@db/app?x=1\" here", "invalid URI \"postgresql://app:***@db/app?x=1\" here"),
        ("a postgres://a:one@h/d and b postgres://b:two@h/d", "a postgres://a:***@h/d and b postgres://b:***@h/d"),
        // Unescaped @, / and ? in the password: hidden up to the last @ before the options.
        ("postgres://app:p@ss@db/app", "postgres://app:***@db/app"),
        ("postgres://app:pa/ss@db/app", "postgres://app:***@db/app"),
        ("postgres://app:pa?ss@db/app", "postgres://app:***@db/app"),
        ("postgres://app:pw@db/app?application_name=a@b", "postgres://app:***@db/app?application_name=a@b"),
        // Nothing to hide.
        ("postgres://app@db:5432/app", "postgres://app@db:5432/app"),
        ("postgres://db:5432/app?application_name=x@y", "postgres://db:5432/app?application_name=x@y"),
        ("sqlite:./a.sqlite", "sqlite:./a.sqlite"),
        ("", ""),
    ])
    func authority(_ text: String, _ expected: String) {
        #expect(StoreConfiguration.redact(text) == expected, "redacting \(text)")
    }

    @Test("password= options are hidden, in URIs and in libpq's key=value form", arguments: [
        ("postgres://db/app?password=hunter2&sslmode=require", "postgres://db/app?password=***&sslmode=require"),
        ("postgres://db/app?sslmode=require&PASSWORD=hunter2", "postgres://db/app?sslmode=require&PASSWORD=***"),
        ("host=db password=hunter2 dbname=app", "host=db password=*** dbname=app"),
        ("host=db password = 'hunter 2\\' x' dbname=app", "host=db password = *** dbname=app"),
        ("nopassword=1", "nopassword=1"),
    ])
    func options(_ text: String, _ expected: String) {
        #expect(StoreConfiguration.redact(text) == expected, "redacting \(text)")
    }

    @Test("a configuration's passwords are hidden wherever they are quoted, as given and percent-decoded")
    func secretsOfConfigurations() {
        let configuration = "postgres://app:hunter%40two@db/app?sslmode=bogus"
        let echoed = "invalid value for \"x\": hunter%40two, decoded hunter@two"
        let redacted = StoreConfiguration.redact(echoed, secretsOf: [configuration])
        #expect(!redacted.contains("hunter"), "\(redacted)")
        #expect(redacted == "invalid value for \"x\": ***, decoded ***")
        // A short password is not hunted as bare text (it would blank out words), but still
        // hidden inside a URI.
        #expect(StoreConfiguration.redact("at a db", secretsOf: ["postgres://u:a@db/x"]) == "at a db")
        #expect(StoreConfiguration.redact("postgres://u:a@db/x", secretsOf: ["postgres://u:a@db/x"]) == "postgres://u:***@db/x")
    }

    @Test("configuration errors never quote a password, even one cut short by an unescaped ?")
    func configurationErrors() throws {
        let error = try #require(throws: ReservoirError.self) { _ = try StoreConfiguration("postgres://app:hunter?two@db/app") }
        #expect(!error.message.contains("hunter") && !error.message.contains("two@"), "\(error.message)")
        #expect(error.message.contains("%3F"), "says how to escape: \(error.message)")
    }
}
