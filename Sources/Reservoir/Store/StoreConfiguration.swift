/// A parsed configuration string: `scheme:location?option=value&option=value`.
///
///     memory:
///     sqlite:./app.sqlite
///     sqlite:/var/lib/app/data.sqlite?durability=full
///     lmdb:./app.lmdb?mapsize=1GiB
///
/// The scheme picks the backend; the location and options are the backend's to read.
public struct StoreConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The string as given.
    public let string: String
    /// The lower-cased scheme before the first `:`.
    public let scheme: String
    /// Everything between `:` and `?`: a path for file-backed schemes, empty for `memory:`.
    public let location: String
    /// `key=value` pairs after `?`, separated by `&`.
    public let options: [String: String]

    /// How a backend names a store at the start of its error messages, so every backend's
    /// messages read alike: `SQLite store "./app.sqlite"`, then `: ` and what went wrong.
    public static func storeName(_ backend: String, _ location: String) -> String {
        "\(backend) store \"\(location)\""
    }

    /// Parses `string`; throws `.invalidConfiguration` naming the string and the expected form.
    public init(_ string: String) throws {
        self.string = string
        let trimmed = string.trimmingWhitespace()
        guard let colon = trimmed.firstIndex(of: ":") else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(Self.redact(string))\" has no scheme; expected SCHEME:LOCATION, such as memory:, sqlite:./app.sqlite or lmdb:./app.lmdb")
        }
        let scheme = trimmed[..<colon].lowercased()
        guard let first = scheme.first, first.isASCII, first.isLetter,
              scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else {
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(Self.redact(string))\" has an invalid scheme \"\(scheme)\"; expected letters, digits, +, - or . starting with a letter, as in sqlite:./app.sqlite")
        }
        self.scheme = scheme
        var rest = trimmed[trimmed.index(after: colon)...]
        var options: [String: String] = [:]
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty else {
                    // A password holding an unescaped ? is cut there, its rest read as options:
                    // an option with an @ is not shown, since it may be that rest.
                    let shown = pair.contains("@") ? "(not shown: it holds an @, so it may be part of a password; percent-escape ? and @ in a password as %3F and %40)" : "\"\(Self.redact(String(pair)))\""
                    throw ReservoirError(.invalidConfiguration, "store configuration \"\(Self.redact(string))\": option \(shown) is not of the form key=value")
                }
                let key = parts[0].lowercased()
                guard options[key] == nil else {
                    throw ReservoirError(.invalidConfiguration, "store configuration \"\(Self.redact(string))\": option \"\(key)\" is given twice")
                }
                options[key] = String(parts[1])
            }
            rest = rest[..<question]
        }
        if rest.unicodeScalars.contains("\u{0}") {
            // No file system path holds NUL; C would read the path only up to it.
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(Self.redact(string))\": the location contains a NUL character; a location cannot hold one")
        }
        if rest.unicodeScalars.contains("\u{FFFD}") {
            // What invalid UTF-8 in a path (a command-line argument, an environment
            // variable) decodes to: opening it would create a different file.
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(Self.redact(string))\": the location contains U+FFFD, the replacement character that invalid UTF-8 becomes; a location must be valid UTF-8 (rename the file, or pass its path in UTF-8)")
        }
        self.location = String(rest)
        self.options = options
    }

    /// The string with any password in it (`scheme://user:PASSWORD@host`, `password=…`) written
    /// as `***`: what messages, logs and ``description`` show, so a server's password never
    /// reaches them. See ``redact(_:secretsOf:)``.
    public var redacted: String { Self.redact(string) }

    /// Throws `.invalidConfiguration` when an option other than `allowed` is present.
    public func checkOptions(allowed: [String]) throws {
        for key in options.keys.sorted() where !allowed.contains(key) {
            let accepted = allowed.isEmpty ? "none" : allowed.joined(separator: ", ")
            throw ReservoirError(.invalidConfiguration, "store configuration \"\(redacted)\": unknown option \"\(key)\"; \(scheme): accepts \(accepted)")
        }
    }

    /// The configuration string with any password written `***`.
    public var description: String { redacted }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...end])
    }
}
