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
        [Self.prefix, store?.uuidString.lowercased() ?? "", String(position.sequence), String(position.commit, radix: 16)]
            .joined(separator: ".")
    }

    /// A token read from its text form; nil when `description` is not one.
    public init?(_ description: String) {
        guard let token = try? HistoryToken(parsing: description) else { return nil }
        self = token
    }

    /// A token read from its text form, or an `.invalidToken` error naming what was given and
    /// what a token looks like.
    public init(parsing text: String) throws {
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
