import Reservoir

/// The record the PostgreSQL tests and their helper process (`ReservoirPostgresTestHelper`)
/// both store: one definition, so the processes cannot drift apart on its schema.
public struct Message: Storable, Equatable {
    public var id: Int
    public var author: Int
    public var body: String

    public init(id: Int, author: Int, body: String) {
        self.id = id
        self.author = author
        self.body = body
    }

    public static let schema = Schema<Message>("messages", fields: [.field(\.author, indexed: true), .field(\.body)])
}
