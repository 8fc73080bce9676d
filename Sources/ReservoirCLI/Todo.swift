import Foundation
import Reservoir

/// The to-do record the tool's commands work with, stored as record type `todos`.
struct Todo: Storable {
    var id: UUID
    var title: String
    var done: Bool
    var priority: Int
    var created: Date
    var due: Date?

    static let schema = Schema<Todo>("todos", fields: [
        .field(\.id), .field(\.title), .field(\.done, indexed: true), .field(\.priority, indexed: true),
        .field(\.created), .field(\.due),
    ])
}
