import Reservoir

/// The record the LMDB tests and their helper process (`ReservoirLMDBTestHelper`) both store:
/// one definition, so the two processes cannot drift apart on its schema.
public struct Note: Storable {
    public var id: Int
    public var title: String
    public var priority: Int?
    public var score: Double?
    public var tag: String?

    public init(id: Int, title: String, priority: Int? = nil, score: Double? = nil, tag: String? = nil) {
        self.id = id
        self.title = title
        self.priority = priority
        self.score = score
        self.tag = tag
    }

    public static let schema = Schema<Note>("notes", fields: [
        .field(\.id),
        .field(\.title), .field(\.priority, indexed: true), .field(\.score, indexed: true), .field(\.tag),
    ])
}
