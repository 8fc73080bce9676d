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

extension Message {
    /// A digest of `messages` (ids and bodies, in order): what a process reports for another
    /// to compare with its own fetch (FNV-1a, 64 bits).
    public static func digest(_ messages: [Message]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for message in messages {
            for byte in "\(message.id):\(message.author):\(message.body);".utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            }
        }
        return hash
    }
}
