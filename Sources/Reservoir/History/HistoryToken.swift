import Foundation

/// A place in one store's history: which store, which change set, and which commit made it.
///
/// Take one with ``Store/currentHistoryToken`` or from a change set (``ChangeSet/historyToken``),
/// keep it anywhere (it is `Codable`, and its ``description`` is a stable one-line text form for a
/// file, a URL, `UserDefaults` or a command line), and later ask the store for everything after it
/// (``Store/history(after:limit:)``). The store refuses, with a one-line error saying what to
/// do, a token it can no longer answer for exactly: one its retained history no longer reaches, one
/// whose commit it lost and whose number it reused (``CommitPosition``), one ahead of it (an older
/// backup restored), and one of another store.
///
/// Tokens compare by position, which is meaningful only between tokens of the same store.
///
/// The text form is `rsv1.STORE.SEQUENCE.COMMIT`: the store's identity (a UUID, lowercase; empty
/// for a store that has none yet), the sequence in decimal and the commit identity in hexadecimal.
public struct HistoryToken: Sendable, Hashable, Comparable, Codable, LosslessStringConvertible {
    /// The identity of the store the token came from, made when the store was created and kept
    /// in its files; nil for a store that has none yet (PostgreSQL before its first write).
    public let store: UUID?
    /// The sequence and commit identity of the change set the token follows.
    public let position: CommitPosition

    /// The token after change set `position` of the store `store`.
    public init(store: UUID?, position: CommitPosition) {
        self.store = store
        self.position = position
    }

    /// The sequence of the change set the token follows (0: before the first).
    public var sequence: UInt64 { position.sequence }

    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool {
        lhs.sequence < rhs.sequence
    }

    static let prefix = "rsv1"

    /// The token written as text (`rsv1.STORE.SEQUENCE.COMMIT`).
    public var description: String {
        // Written byte by byte: a following replica writes and reads tokens several times a
        // commit, and `uuidString.lowercased()` with `joined` was a few percent of its time.
        var bytes: [UInt8] = Array(Self.prefix.utf8)
        bytes.reserveCapacity(80)
        bytes.append(UInt8(ascii: "."))
        if let store { appendUUIDText(store, to: &bytes, digits: lowercaseHexDigits) }
        bytes.append(UInt8(ascii: "."))
        bytes.append(contentsOf: String(position.sequence).utf8)
        bytes.append(UInt8(ascii: "."))
        bytes.append(contentsOf: String(position.commit, radix: 16).utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A token read from its text form; nil when `description` is not one.
    public init?(_ description: String) {
        guard let token = try? HistoryToken(parsing: description) else { return nil }
        self = token
    }

    /// A token read from its text form, or an `.invalidToken` error naming what was given and
    /// what a token looks like.
    public init(parsing text: String) throws {
        if let token = Self.parsedQuickly(text) {
            self = token
            return
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        func refuse(_ why: String) -> ReservoirError {
            let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
            return ReservoirError(.invalidToken, "\"\(shown)\" is not a history token (\(why)); expected rsv1.STORE.SEQUENCE.COMMIT, as Store.currentHistoryToken.description gives")
        }
        guard parts.count == 4, parts[0] == Self.prefix else { throw refuse("it does not have the four parts of a version 1 token") }
        var store: UUID?
        if !parts[1].isEmpty {
            guard let identity = UUID(uuidString: String(parts[1])) else { throw refuse("its store part is not a UUID") }
            store = identity
        }
        guard parts[2].allSatisfy(\.isASCII), let sequence = UInt64(parts[2]) else { throw refuse("its sequence is not a whole number") }
        guard parts[3].allSatisfy(\.isASCII), let commit = UInt64(parts[3], radix: 16) else { throw refuse("its commit is not a hexadecimal number") }
        self.init(store: store, position: CommitPosition(sequence: sequence, commit: commit))
    }

    /// The token `text` writes when it is well formed, read without `split` or
    /// `UUID(uuidString:)` (which goes through `sscanf`); nil otherwise, and the careful parse
    /// above then says what is wrong. Takes only what that parse takes: a lowercase or
    /// uppercase UUID, a decimal sequence and a hexadecimal commit, each within `UInt64`.
    private static func parsedQuickly(_ text: String) -> HistoryToken? {
        var text = text
        return text.withUTF8 { bytes -> HistoryToken? in
            let prefix = "rsv1.".utf8
            guard bytes.count > prefix.count + 3, bytes.starts(with: prefix) else { return nil }
            var at = prefix.count
            var store: UUID?
            if bytes[at] != UInt8(ascii: ".") {
                guard bytes.count > at + 36, bytes[at + 36] == UInt8(ascii: ".") else { return nil }
                var uuid = [UInt8](repeating: 0, count: 16)
                var out = 0
                var offset = 0
                while offset < 36 {
                    if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                        guard bytes[at + offset] == UInt8(ascii: "-") else { return nil }
                        offset += 1
                        continue
                    }
                    guard let high = hexValue(bytes[at + offset]), let low = hexValue(bytes[at + offset + 1]) else { return nil }
                    uuid[out] = high << 4 | low
                    out += 1
                    offset += 2
                }
                store = UUID(uuid: (uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7],
                                    uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]))
                at += 36
            }
            at += 1
            func number(radix: UInt64, until end: UInt8?) -> UInt64? {
                var value: UInt64 = 0
                let start = at
                while at < bytes.count, bytes[at] != end {
                    guard let digit = radix == 16 ? hexValue(bytes[at]) : decimalValue(bytes[at]) else { return nil }
                    let (shifted, over) = value.multipliedReportingOverflow(by: radix)
                    let (sum, overAgain) = shifted.addingReportingOverflow(UInt64(digit))
                    guard !over, !overAgain else { return nil }
                    value = sum
                    at += 1
                }
                return at > start ? value : nil
            }
            guard let sequence = number(radix: 10, until: UInt8(ascii: ".")), at < bytes.count else { return nil }
            at += 1
            guard let commit = number(radix: 16, until: nil) else { return nil }
            return HistoryToken(store: store, position: CommitPosition(sequence: sequence, commit: commit))
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func decimalValue(_ byte: UInt8) -> UInt8? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? byte - UInt8(ascii: "0") : nil
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(parsing: container.decode(String.self))
    }

    /// Encoded as its text form, so a stored token reads the same everywhere.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
