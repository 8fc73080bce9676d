import Foundation

/// The one error type Reservoir throws.
///
/// Every error has a ``Code`` to match on, a message that names the offending
/// input and what was expected, and, when a storage engine reported it, the
/// engine's native result code and message.
///
///     do { try store.write { try $0.insert(todo) } }
///     catch let error as ReservoirError where error.code == .duplicateID { … }
public struct ReservoirError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as `description` prints it.
        public let rawValue: String
        /// A code with the given name; use the static codes below.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// A configuration string that is malformed or names an unknown scheme.
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")
        /// A path or store that cannot be opened (missing directory, not a database, …).
        public static let cannotOpen = Code(rawValue: "cannotOpen")
        /// A record type whose schema is inconsistent with its coding keys.
        public static let invalidSchema = Code(rawValue: "invalidSchema")
        /// A query on a key path the schema does not name, or otherwise malformed.
        public static let invalidQuery = Code(rawValue: "invalidQuery")
        /// A stored value that does not decode into the requested Swift type.
        public static let typeMismatch = Code(rawValue: "typeMismatch")
        /// A Swift value that no backend can store (e.g. a UInt64 above Int64.max).
        public static let valueOutOfRange = Code(rawValue: "valueOutOfRange")
        /// `insert` of an id that already exists.
        public static let duplicateID = Code(rawValue: "duplicateID")
        /// `update` of an id that does not exist (`delete` returns false instead).
        public static let notFound = Code(rawValue: "notFound")
        /// A transaction used after its closure returned, or a write started inside a write.
        public static let misuse = Code(rawValue: "misuse")
        /// The store has been closed.
        public static let closed = Code(rawValue: "closed")
        /// The files the store opened were deleted or replaced under it (by a person, a
        /// script, a restore): the store stops, writes fail and live subscriptions complete
        /// with this error, rather than go on with data other processes no longer see.
        /// Open the store again to use what is at its location now.
        public static let gone = Code(rawValue: "gone")
        /// A write to a store opened read-only (`?mode=readonly`, or files this process may
        /// not write).
        public static let readOnly = Code(rawValue: "readOnly")
        /// The database is busy or locked by another process for too long.
        public static let busy = Code(rawValue: "busy")
        /// The disk or the storage map is full.
        public static let full = Code(rawValue: "full")
        /// Stored data is damaged or in a format this version cannot read.
        public static let corrupt = Code(rawValue: "corrupt")
        /// A server did not answer within the configured time (PostgreSQL's `timeout=`): the
        /// connection is dropped and the call fails; nothing of an unfinished transaction is
        /// committed, unless the code is ``commitOutcomeUnknown``.
        public static let timeout = Code(rawValue: "timeout")
        /// The connection was lost (or timed out) after `COMMIT` was sent and before the server
        /// answered, and the store could not find out afterwards whether the transaction
        /// committed. It may have: never retry blindly. Backends.md § PostgreSQL says how the
        /// outcome is learnt later.
        public static let commitOutcomeUnknown = Code(rawValue: "commitOutcomeUnknown")
        /// A history token (``HistoryToken``) the store can no longer answer for exactly: its
        /// retained history no longer reaches back to it, the commit it names was lost (and its
        /// number reused), or it is ahead of the store (an older copy restored). Re-read what
        /// you keep from the store and continue from a fresh ``Store/currentHistoryToken``.
        public static let historyExpired = Code(rawValue: "historyExpired")
        /// Text that is not a history token, or a token of another store.
        public static let invalidToken = Code(rawValue: "invalidToken")
        /// A migration step failed (a transform threw, a value did not convert, a field it
        /// names does not exist): the message names the version, the step, the entity and the
        /// record, and the whole version was rolled back (``Store/migrate(_:)``).
        public static let migrationFailed = Code(rawValue: "migrationFailed")
        /// The store is at a schema version this app's ``Migrations`` do not know, and that
        /// version is not additive: the message names both versions and the steps.
        public static let unknownSchemaVersion = Code(rawValue: "unknownSchemaVersion")
        /// The engine or server refused a change for what it is: a constraint other than the
        /// id's, or a trigger or rule raising an error. Sending the same change again fails
        /// the same way (``Sync`` reports such a change as rejected instead of retrying it).
        public static let refused = Code(rawValue: "refused")
        /// Any other failure reported by the storage engine.
        public static let backend = Code(rawValue: "backend")
    }

    /// What kind of failure this is, to match on.
    public var code: Code
    /// A sentence naming what was given and what was expected, on one line: control
    /// characters (from a path or configuration string, say) are shown as `\u{…}` escapes,
    /// so a message never spans lines or moves a terminal's cursor.
    public var message: String {
        didSet { if Self.needsEscaping(message) { message = Self.escapingControls(message) } }
    }
    /// The storage engine's own result code, when it reported one.
    public var nativeCode: Int32?
    /// The storage engine's own message, when it reported one.
    public var nativeMessage: String?

    /// An error with `code`, a one-line `message`, and the engine's native code and message when it reported them.
    public init(_ code: Code, _ message: String, nativeCode: Int32? = nil, nativeMessage: String? = nil) {
        self.code = code
        self.message = Self.needsEscaping(message) ? Self.escapingControls(message) : message
        self.nativeCode = nativeCode
        self.nativeMessage = nativeMessage
    }

    /// The message, followed by the native code and message when there are any.
    public var description: String {
        var text = message
        if let nativeCode {
            text += " (native code \(nativeCode)"
            if let nativeMessage, !nativeMessage.isEmpty { text += ": \(nativeMessage)" }
            text += ")"
        } else if let nativeMessage, !nativeMessage.isEmpty {
            text += " (\(nativeMessage))"
        }
        return text
    }
}

extension ReservoirError {
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    static func needsEscaping(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: isControl)
    }

    static func escapingControls(_ text: String) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The error every call on a closed store throws, on every backend, in one wording.
    /// `store` is the store's configuration string (``StoreConfiguration/redacted``), or the
    /// backend's scheme and location when it has none.
    public static func closed(store: String) -> ReservoirError {
        ReservoirError(.closed, "store \"\(store)\": the store has been closed; open it again to use it")
    }

    /// This error with `store` (its configuration string) named at the front of its
    /// message, unless the message names the store's `location` already: every error says
    /// which store it is about, decode errors included.
    public func naming(store: String, location: String) -> ReservoirError {
        guard !store.isEmpty, !message.contains(store), location.isEmpty || !message.contains(location) else { return self }
        var named = self
        named.message = "store \"\(store)\": " + message
        return named
    }
}

extension ReservoirError: LocalizedError {
    /// The message, so `localizedDescription` shows it on every platform.
    public var errorDescription: String? { description }
}
