import Foundation

// MARK: - Redaction

extension StoreConfiguration {
    /// `text` with every secret in it written `***`: the one function every message, log line,
    /// `info` line and JSON field that may hold a configuration string goes through.
    ///
    ///     StoreConfiguration.redact("postgres://app:hunter2@db/app")   // postgres://app:***@db/app
    ///     StoreConfiguration.redact("host=db password=hunter2")         // host=db password=***
    ///
    /// Hidden wherever they appear in `text` (which may be a whole message, not just a string):
    /// - the password of every `//user:PASSWORD@host` authority, up to its last `@` before the
    ///   options (so an unescaped `@`, `/` or `?` in a password does not leave part of it);
    /// - the value of every `password=` option (`?password=…`, `&password=…`, and libpq's
    ///   `key=value` form, quoted or not);
    /// - each password that a configuration in `configurations` holds, wherever else it
    ///   appears in `text`, as given and percent-decoded (a library that echoes part of a
    ///   string, libpq say, may quote it without its URI). Passwords shorter than 4 characters
    ///   are not searched for as bare text: that would blank out ordinary words.
    public static func redact(_ text: String, secretsOf configurations: [String] = []) -> String {
        var result = redactPasswordOptions(redactAuthorities(text))
        let secrets = configurations.flatMap(passwords(in:)).filter { $0.count >= 4 && $0 != "***" }
        for secret in Set(secrets).sorted(by: { $0.count > $1.count }) {
            result = result.replacingAll(secret, with: "***")
        }
        return result
    }

    /// The passwords a configuration string holds: its authority's and its `password=`
    /// options', each as written and percent-decoded.
    static func passwords(in configuration: String) -> [String] {
        var found: [String] = []
        var searchStart = configuration.startIndex
        while let slashes = configuration.range(of: "//", range: searchStart..<configuration.endIndex) {
            if let span = passwordSpan(in: configuration, afterSlashes: slashes.upperBound) {
                found.append(String(configuration[span]))
            }
            searchStart = slashes.upperBound
        }
        for span in passwordOptionSpans(in: configuration) {
            var value = String(configuration[span])
            if value.hasPrefix("'"), value.hasSuffix("'"), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            found.append(value)
        }
        return found.flatMap { raw in
            let decoded = raw.removingPercentEncodingLeniently()
            return decoded == raw ? [raw] : [raw, decoded]
        }.filter { !$0.isEmpty }
    }

    /// Every `//user:PASSWORD@` in `text` with its password written `***`.
    private static func redactAuthorities(_ text: String) -> String {
        var result = ""
        var rest = text[...]
        while let slashes = rest.range(of: "//") {
            result += rest[..<slashes.upperBound]
            let tail = String(rest[slashes.upperBound...])
            guard let span = passwordSpan(in: tail, afterSlashes: tail.startIndex) else {
                rest = rest[slashes.upperBound...]
                continue
            }
            result += tail[..<span.lowerBound] + "***"
            rest = Substring(tail[span.upperBound...])
        }
        return result + rest
    }

    /// The password in the authority that starts at `start` (just after `//`): from the first
    /// `:` of the user part to the last `@` before the options (or, when the options hold
    /// the only `@`, a `?` in the password, the last `@` of the token). Nil without a password.
    private static func passwordSpan(in text: String, afterSlashes start: String.Index) -> Range<String.Index>? {
        // The token ends at white space or a quote: a URI inside a message ends there.
        let end = text[start...].firstIndex { $0.isWhitespace || $0 == "\"" || $0 == "'" } ?? text.endIndex
        let token = text[start..<end]
        guard let firstAt = token.firstIndex(of: "@"),
              let colon = token[..<firstAt].firstIndex(of: ":") else { return nil }
        let question = token.firstIndex(of: "?") ?? token.endIndex
        // An @ only in the options is a password cut short by an unescaped ? when no path
        // came between (`//app:pa?ss@db`), not a value (`//db:5432/app?name=x@y`).
        if firstAt > question, token[colon..<question].contains("/") { return nil }
        let beforeOptions = token[..<question]
        guard let lastAt = beforeOptions.lastIndex(of: "@") ?? token.lastIndex(of: "@"), lastAt > colon else { return nil }
        return token.index(after: colon)..<lastAt
    }

    /// The value of every `password=` option in `text`.
    private static func passwordOptionSpans(in text: String) -> [Range<String.Index>] {
        var spans: [Range<String.Index>] = []
        var searchStart = text.startIndex
        while let key = text.range(of: "password", options: .caseInsensitive, range: searchStart..<text.endIndex) {
            searchStart = key.upperBound
            // A key of its own: at the start, or after ?, &, ; or white space.
            if key.lowerBound > text.startIndex {
                let before = text[text.index(before: key.lowerBound)]
                guard before == "?" || before == "&" || before == ";" || before.isWhitespace else { continue }
            }
            var index = key.upperBound
            while index < text.endIndex, text[index] == " " { index = text.index(after: index) }
            guard index < text.endIndex, text[index] == "=" else { continue }
            index = text.index(after: index)
            while index < text.endIndex, text[index] == " " { index = text.index(after: index) }
            let valueStart = index
            if index < text.endIndex, text[index] == "'" {
                // libpq's quoted value: up to the closing quote not escaped by a backslash.
                index = text.index(after: index)
                while index < text.endIndex, text[index] != "'" {
                    if text[index] == "\\" { index = text.index(after: index); if index == text.endIndex { break } }
                    index = text.index(after: index)
                }
                if index < text.endIndex { index = text.index(after: index) }
            } else {
                while index < text.endIndex, !(text[index] == "&" || text[index].isWhitespace || text[index] == "\"") {
                    index = text.index(after: index)
                }
            }
            if index > valueStart { spans.append(valueStart..<index) }
            searchStart = index
        }
        return spans
    }

    /// `text` with the value of every `password=` option written `***`.
    private static func redactPasswordOptions(_ text: String) -> String {
        var result = text
        for span in passwordOptionSpans(in: text).reversed() where text[span] != "***" {
            result.replaceSubrange(span, with: "***")
        }
        return result
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = self[...]
        while let found = rest.range(of: target) {
            result += rest[..<found.lowerBound] + replacement
            rest = rest[found.upperBound...]
        }
        return result + rest
    }

    /// Percent-decoded where the escapes are valid UTF-8, else unchanged.
    func removingPercentEncodingLeniently() -> String {
        guard contains("%") else { return self }
        var bytes: [UInt8] = []
        var utf8 = Array(self.utf8)[...]
        while let byte = utf8.first {
            if byte == UInt8(ascii: "%"), utf8.count >= 3,
               let value = UInt8(String(decoding: utf8.dropFirst().prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
                utf8 = utf8.dropFirst()
            }
        }
        return String(validating: bytes, as: UTF8.self) ?? self
    }
}
