import CLibPQ
import Foundation
import Reservoir

/// The options of a `postgres://` (or `postgresql://`) configuration string.
///
///     postgres://app:secret@db.internal:5432/app?sslmode=require&schema=chat&retention=50000
///
/// Everything libpq accepts in a connection URI (`sslmode`, `connect_timeout`,
/// `application_name`, `host=/run/postgresql` for a socket directory, …) is passed on to
/// libpq unchanged; these are Reservoir's own:
/// - `schema`: where the store's tables live (default `public`); one store per schema.
/// - `retention`: change sets the change log keeps (default 10,000; 0 keeps all), as on SQLite.
/// - `readers`: idle reader connections kept open (1–64, default 4).
/// - `durability`: `full` (default) waits for the server to flush each commit; `normal`
///   (`synchronous_commit = off`) may lose the last commits if the *server* crashes, never
///   damaging anything, like SQLite's `normal`.
/// - `timeout`: seconds any one call waits for the server (1–86400, default 60): longer, and
///   the connection is dropped and the call throws `.timeout` (or `.commitOutcomeUnknown`
///   when it was a `COMMIT`). Connecting waits libpq's `connect_timeout` (default 10).
public struct PostgresOptions: Sendable, Hashable {
    /// `full` (the default) or `normal` in a configuration string; `.none` set in code is `normal`.
    public typealias Durability = Reservoir.Durability

    public var schema: String
    /// What the change log keeps: `retention=`, `retentionage=`, `holdage=` (``HistoryRetention``).
    public var history: HistoryRetention
    /// How many change sets the change log keeps at least (0: no count).
    public var retention: Int {
        get { history.count }
        set { history.count = max(0, newValue) }
    }
    public var readers: Int
    public var durability: Durability
    /// Seconds one call waits for the server before the connection is dropped.
    public var timeout: Int

    public init(schema: String = "public", retention: Int = 10_000, readers: Int = 4, durability: Durability = .full, timeout: Int = 60) {
        self.schema = schema
        self.history = HistoryRetention(count: retention)
        self.readers = readers
        self.durability = durability
        self.timeout = timeout
    }

    /// Reservoir's own option names; every other option goes to libpq.
    public static let names = ["durability", "readers", "schema", "timeout"] + StoreConfiguration.historyOptionNames

    /// How long a write waits for the write lock (the meta row) before `.busy`: 30 s, or half
    /// the call timeout when that is shorter, so a busy store is reported as busy, not as a
    /// timeout.
    var lockTimeoutMilliseconds: Int { min(30_000, timeout * 500) }

    /// Reads Reservoir's options from `configuration`.
    public init(_ configuration: StoreConfiguration) throws {
        self.init()
        if let value = configuration.options["schema"] {
            guard Self.isValidSchema(value) else {
                throw configuration.invalidOption("schema", expected: "a schema name of letters, digits and _, not starting with a digit, at most 50 characters")
            }
            schema = value
        }
        history = try configuration.historyRetention(defaultCount: retention)
        readers = try configuration.integer("readers", in: 1...64, default: readers, expected: "a number of idle reader connections from 1 to 64")
        durability = try configuration.durability(default: durability)
        timeout = try configuration.integer("timeout", in: 1...86_400, default: timeout, expected: "a number of seconds from 1 to 86400 that a call waits for the server")
    }

    static func isValidSchema(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 50, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}

/// Where a configuration string says the server is: libpq's connection URI (with a
/// connect timeout and TCP keepalives unless given) and a password-free name for messages.
struct PostgresServer: Sendable {
    let conninfo: String
    /// `postgres://user@host:port/db`: the URI without its password or options.
    let location: String
    /// `PostgreSQL store postgres://user@host:port/db (schema s)`, the start of every message.
    let name: String
    /// Seconds a connection attempt may take (libpq's `connect_timeout`).
    let connectTimeout: Int
    /// The configuration string as given, whose passwords ``redact(_:)`` hides in any text.
    let configuration: String

    init(_ configuration: StoreConfiguration, schema: String) throws {
        self.configuration = configuration.string
        var libpqOptions: [(String, String)] = []
        for key in configuration.options.keys.sorted() where !PostgresOptions.names.contains(key) {
            libpqOptions.append((key, configuration.options[key] ?? ""))
        }
        // Bounded waits where the client cannot poll: connecting, and TCP keepalives so a
        // connection waiting for notifications notices a server that vanished from the network.
        let defaults = [("connect_timeout", "10"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3")]
        for (key, value) in defaults where !libpqOptions.contains(where: { $0.0 == key }) {
            libpqOptions.append((key, value))
        }
        let connectText = libpqOptions.first { $0.0 == "connect_timeout" }?.1 ?? "10"
        let uri = configuration.location.isEmpty ? "//" : configuration.location
        guard uri.hasPrefix("//") else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\": expected a connection URI, postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTIONS]")
        }
        try Self.checkAuthority(uri, configuration)
        conninfo = "postgresql:" + uri + "?" + libpqOptions.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let shown = StoreConfiguration.redact(uri)
        location = "\(configuration.scheme):\(shown)"
        name = StoreConfiguration.storeName("PostgreSQL", location) + " (schema \(schema))"
        guard let seconds = Int(connectText), seconds >= 0 else {
            throw configuration.invalidOption("connect_timeout", expected: "a whole number of seconds (libpq's connect_timeout; 0 waits forever)")
        }
        connectTimeout = seconds
        // libpq's own check of the URI: unknown options, a malformed port, bad percent-encoding.
        var error: UnsafeMutablePointer<CChar>?
        if let parsed = PQconninfoParse(conninfo, &error) {
            PQconninfoFree(parsed)
        } else {
            // libpq quotes the URI it was given, password and all: the message is redacted.
            let message = StoreConfiguration.redact(error.map { String(cString: $0) }?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "not a connection URI",
                                                    secretsOf: [configuration.string])
            if let error { PQfreemem(error) }
            let accepted = PostgresOptions.names.joined(separator: ", ")
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\": libpq rejects it: \(message) (Reservoir's own options are \(accepted); the rest go to libpq)")
        }
    }

    /// `text` (a libpq message, say) with this store's passwords hidden.
    func redact(_ text: String) -> String {
        StoreConfiguration.redact(text, secretsOf: [configuration])
    }

    /// Refuses an authority libpq would split differently from what the user meant, before
    /// libpq quotes a piece of a password back in a message: libpq ends the user part at the
    /// first `@` and the host at the first `/`, so `@`, `/`, `?` and `#` in a user name or
    /// password must be percent-escaped.
    static func checkAuthority(_ uri: String, _ configuration: StoreConfiguration) throws {
        let escape = "percent-escape @ / ? # in a user name or password (%40, %2F, %3F, %23), e.g. postgres://app:p%40ss@db.internal/app"
        let authority = uri.dropFirst(2).prefix { $0 != "/" }
        let ats = authority.filter { $0 == "@" }.count
        if ats > 1 {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\": the user name or password holds an unescaped @ (libpq would read the rest as the host); \(escape)")
        }
        let hosts = ats == 1 ? authority[authority.index(after: authority.firstIndex(of: "@") ?? authority.startIndex)...] : authority
        for host in hosts.split(separator: ",", omittingEmptySubsequences: false) {
            // An IPv6 address is bracketed; its port follows the "]".
            let afterAddress = host.hasPrefix("[") ? host[(host.firstIndex(of: "]") ?? host.endIndex)...] : host
            guard let colon = afterAddress.firstIndex(of: ":") else { continue }
            let port = afterAddress[afterAddress.index(after: colon)...]
            guard port.isEmpty || !port.allSatisfy({ $0.isASCII && $0.isNumber }) else { continue }
            if ats == 1 {
                throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\": port \"\(port)\" is not a port number; expected digits, as in postgres://app@db.internal:5432/app")
            }
            // No @ before the first /: what follows the : may be a password cut short by a /, ? or #.
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\": the text after : in the host part is not a port number (not shown: it may be part of a password); expected HOST:PORT with digits, or, when it is a password, \(escape)")
        }
    }
}
