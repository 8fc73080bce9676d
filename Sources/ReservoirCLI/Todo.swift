import Foundation
import Reservoir
import ReservoirMacros

/// The to-do record the tool's commands work with, stored as record type `todos`.
@Storable("todos")
struct Todo {
    var id: UUID
    var title: String
    @Indexed var done: Bool
    @Indexed var priority: Int
    var created: Date
    var due: Date?
}

/// How lists of to-dos are sorted.
enum TodoSort: String, CaseIterable, Sendable {
    case priority, title, due, created

    var keys: [SortKey<Todo>] {
        switch self {
        case .priority: [.descending(\.priority), .ascending(\.title)]
        case .title: [.ascending(\.title)]
        case .due: [.ascending(\.due), .descending(\.priority)]
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
        let dueText = due.map { "  due \(DateText.format($0))" } ?? ""
        return "[\(mark)] \(shortID)  p\(priority)  \(title)\(dueText)"
    }

    /// The to-do as JSON-ready values.
    var json: [String: Any] {
        var object: [String: Any] = ["id": id.uuidString, "title": title, "done": done, "priority": priority,
                                     "created": DateText.iso(created)]
        object["due"] = due.map(DateText.iso) ?? NSNull()
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
