import Foundation
import Reservoir
import ReservoirMacros

/// The to-do record the tool's commands work with, stored as record type `todos`, in the
/// shape of schema version 2 (``migrations``).
@Storable("todos")
struct Todo {
    var id: UUID
    var title: String
    @Indexed var done: Bool
    @Indexed var priority: Int
    var created: Date
    /// The day it is due, `YYYY-MM-DD` (UTC).
    var dueDay: String?
    /// The title's `#words`, lower-cased, one space between them; nil for a to-do another
    /// client wrote without them.
    var tags: String?

    init(id: UUID, title: String, done: Bool = false, priority: Int, created: Date, dueDay: String? = nil) {
        self.id = id
        self.title = title
        self.done = done
        self.priority = priority
        self.created = created
        self.dueDay = dueDay
        self.tags = Self.tags(in: title)
    }

    /// The schema versions of the to-do store. Version 1 kept `due` as an instant (midnight UTC
    /// for a day given alone); version 2 keeps the day itself as text, which reads plainly in
    /// SQL and sorts the same, and adds `tags`, computed from each title. Every command that
    /// reads or writes to-dos opens its store with these, so a store an older `reservoir`
    /// made (version 1, or never versioned) is brought up to date on open.
    static let migrations = Migrations {
        SchemaVersion(1)
        SchemaVersion(2,
            .renameField("due", to: "dueDay", in: "todos"),
            .changeType(of: "dueDay", in: "todos", from: Date?.self, to: String?.self) { $0.map(DateText.format) },
            .addField("tags", to: "todos") { row in Todo.tags(in: try row.decode("title", as: String.self)) })
    }

    /// The `#words` of `title`, lower-cased, without the `#`, one space between them.
    static func tags(in title: String) -> String {
        title.split(whereSeparator: \.isWhitespace)
            .filter { $0.count > 1 && $0.first == "#" }
            .map { $0.dropFirst().lowercased() }
            .joined(separator: " ")
    }

    /// The tags as a list.
    var tagList: [String] { (tags ?? "").split(separator: " ").map(String.init) }
}

/// How lists of to-dos are sorted.
enum TodoSort: String, CaseIterable, Sendable {
    case priority, title, due, created

    var keys: [SortKey<Todo>] {
        switch self {
        case .priority: [.descending(\.priority), .ascending(\.title)]
        case .title: [.ascending(\.title)]
        case .due: [.ascending(\.dueDay), .descending(\.priority)]
        case .created: [.ascending(\.created)]
        }
    }
}

extension Todo {
    /// The request for a list of to-dos.
    static func request(openOnly: Bool, sort: TodoSort, limit: Int? = nil) -> FetchRequest<Todo> {
        FetchRequest(where: openOnly ? \.done == false : .always, sortBy: sort.keys, limit: limit)
    }

    /// The one to-do whose id starts with `prefix` (any case); errors name the prefix.
    static func find(_ prefix: String, in store: Store) throws -> Todo {
        let wanted = prefix.uppercased()
        guard !wanted.isEmpty, wanted.allSatisfy({ $0.isHexDigit || $0 == "-" }) else {
            throw CommandFailure("\"\(prefix)\" is not a to-do id; expected the id or a unique prefix of it, such as 3F2A")
        }
        let matches = try store.fetch(FetchRequest<Todo>(where: .hasPrefix(\.id, wanted)))
        switch matches.count {
        case 1: return matches[0]
        case 0: throw CommandFailure("no to-do has an id starting with \"\(prefix)\" (reservoir todo list shows the ids)")
        default:
            let ids = matches.prefix(5).map { $0.id.uuidString.prefix(8) }.joined(separator: ", ")
            throw CommandFailure("\"\(prefix)\" matches \(matches.count) to-dos (\(ids)\(matches.count > 5 ? ", ..." : "")); give more of the id")
        }
    }

    /// The short id shown in lists: the first 8 characters.
    var shortID: String { String(id.uuidString.prefix(8)) }

    /// One line for a terminal list.
    var line: String {
        let mark = done ? "x" : " "
        let dueText = dueDay.map { "  due \($0)" } ?? ""
        return "[\(mark)] \(shortID)  p\(priority)  \(title)\(dueText)"
    }

    /// The to-do as JSON-ready values.
    var json: [String: Any] {
        var object: [String: Any] = ["id": id.uuidString, "title": title, "done": done, "priority": priority,
                                     "created": DateText.iso(created)]
        object["due"] = dueDay ?? NSNull()
        object["tags"] = tagList
        return object
    }
}

/// Dates on the command line: `2026-12-01`, `2026-12-01T09:30`, or full ISO 8601.
enum DateText {
    static func parse(_ text: String) throws -> Date {
        let utc = TimeZone(identifier: "UTC") ?? .current
        for format in ["yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = utc
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        throw CommandFailure("\"\(text)\" is not a date; expected YYYY-MM-DD, YYYY-MM-DDTHH:MM, or ISO 8601 such as 2026-12-01T09:30:00Z")
    }

    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: date)
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}

/// JSON text for a value made of dictionaries, arrays, strings, numbers, booleans and NSNull.
func jsonLine(_ object: Any) throws -> String {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    return String(decoding: data, as: UTF8.self)
}
