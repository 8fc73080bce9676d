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
public struct PostgresOptions: Sendable, Hashable {
    /// `full` (the default) or `normal` in a configuration string; `.none` set in code is `normal`.
    public typealias Durability = Reservoir.Durability

    public var schema: String
    public var retention: Int
    public var readers: Int
    public var durability: Durability

    public init(schema: String = "public", retention: Int = 10_000, readers: Int = 4, durability: Durability = .full) {
        self.schema = schema
        self.retention = retention
        self.readers = readers
        self.durability = durability
    }

    /// Reservoir's own option names; every other option goes to libpq.
    public static let names = ["durability", "readers", "retention", "schema"]

    /// Reads Reservoir's options from `configuration`.
    public init(_ configuration: StoreConfiguration) throws {
        self.init()
        if let value = configuration.options["schema"] {
            guard Self.isValidSchema(value) else {
                throw configuration.invalidOption("schema", expected: "a schema name of letters, digits and _, not starting with a digit, at most 50 characters")
            }
            schema = value
        }
        retention = try configuration.retention(default: retention)
        readers = try configuration.integer("readers", in: 1...64, default: readers, expected: "a number of idle reader connections from 1 to 64")
        durability = try configuration.durability(default: durability)
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
/// connect timeout unless one is given) and a password-free name for messages.
struct PostgresServer: Sendable {
    let conninfo: String
    /// `postgres://user@host:port/db`: the URI without its password or options.
    let location: String
    /// `PostgreSQL store postgres://user@host:port/db (schema s)`, the start of every message.
    let name: String

    init(_ configuration: StoreConfiguration, schema: String) throws {
        var libpqOptions: [(String, String)] = []
        for key in configuration.options.keys.sorted() where !PostgresOptions.names.contains(key) {
            libpqOptions.append((key, configuration.options[key] ?? ""))
        }
        if !libpqOptions.contains(where: { $0.0 == "connect_timeout" }) {
            libpqOptions.append(("connect_timeout", "10"))
        }
        let uri = configuration.location.isEmpty ? "//" : configuration.location
        guard uri.hasPrefix("//") else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\": expected a connection URI, postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTIONS]")
        }
        conninfo = "postgresql:" + uri + "?" + libpqOptions.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let shown = StoreConfiguration.redact(uri)
        location = "\(configuration.scheme):\(shown)"
        name = StoreConfiguration.storeName("PostgreSQL", location) + " (schema \(schema))"
        // libpq's own check of the URI: unknown options, a malformed port, bad percent-encoding.
        var error: UnsafeMutablePointer<CChar>?
        if let parsed = PQconninfoParse(conninfo, &error) {
            PQconninfoFree(parsed)
        } else {
            let message = error.map { String(cString: $0) }?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "not a connection URI"
            if let error { PQfreemem(error) }
            let accepted = PostgresOptions.names.joined(separator: ", ")
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(configuration.redacted)\": libpq rejects it: \(message) (Reservoir's own options are \(accepted); the rest go to libpq)")
        }
    }
}
