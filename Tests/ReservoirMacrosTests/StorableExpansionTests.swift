import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// What `@Storable` writes for the structs it accepts; its refusals are in `StorableRefusalTests`.
@Suite("@Storable expansion")
struct StorableExpansionTests {
    @Test("a chat message: every stored property a field, the others named, CodingKeys written to match")
    func message() {
        expand(
            """
            @Storable("messages")
            public struct Message {
                public var id: Int
                @Indexed var channel: String
                @Column("sent_at") var sentAt: Date
                var reactions: [String: Int] = [:]
                @Transient var isSelected = false
                let kind = "chat"
                var preview: String { String(text.prefix(40)) }
                var `default`: Int? { nil }
                var loaded: Int { get async { 1 } }
                static let unrelated = 1
            }
            """,
            to: """
            public struct Message {
                public var id: Int
                var channel: String
                var sentAt: Date
                var reactions: [String: Int] = [:]
                var isSelected = false
                let kind = "chat"
                var preview: String { String(text.prefix(40)) }
                var `default`: Int? { nil }
                var loaded: Int { get async { 1 } }
                static let unrelated = 1

                private enum CodingKeys: String, CodingKey {
                    case id
                    case channel
                    case sentAt = "sent_at"
                    case reactions
                    case kind
                }
            }

            extension Message: Reservoir.Storable {
                public static let schema: Reservoir.Schema<Self> = Reservoir.Schema<Self>("messages", fields: [
                        .field(\\.id, column: "id"),
                        .field(\\.channel, column: "channel", indexed: true),
                        .field(\\.sentAt, column: "sent_at"),
                        .field(\\.reactions, column: "reactions"),
                        .field(\\.kind, column: "kind"),
                    ]).naming(unstored: [
                        .transient(\\.isSelected, "isSelected"),
                        .computed(\\.preview, "preview"),
                        .computed(\\.`default`, "default"),
                    ])
                public static let rowMappedColumns: [String] = ["id", "channel", "sent_at", "reactions", "kind"]
                public func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.id, column: "id"),
                        try Reservoir.Value.encoding(self.channel, column: "channel"),
                        try Reservoir.Value.encoding(self.sentAt, column: "sent_at"),
                        try Reservoir.Value.encoding(self.reactions, column: "reactions"),
                        try Reservoir.Value.encoding(self.kind, column: "kind"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                public init(row: borrowing Reservoir.Row) throws {
                    self.id = try row.decode("id", at: 0)
                    self.channel = try row.decode("channel", at: 1)
                    self.sentAt = try row.decode("sent_at", at: 2)
                    self.reactions = try row.decode("reactions", at: 3)
                }
                public init(reader: borrowing Reservoir.RowReader) throws {
                    self.id = try reader.decode("id", at: 0)
                    self.channel = try reader.decode("channel", at: 1)
                    self.sentAt = try reader.decode("sent_at", at: 2)
                    self.reactions = try reader.decode("reactions", at: 3)
                }
                public static var readsColumns: Bool {
                    true
                }
            }
            """
        )
    }

    @Test("plain stored properties need no CodingKeys; a renamed id becomes the id column")
    func plainAndRenamedID() {
        expand(
            """
            @Storable("tags")
            struct Tag {
                var id: String
                var label: String
            }
            """,
            to: """
            struct Tag {
                var id: String
                var label: String
            }

            extension Tag: Reservoir.Storable {
                static let schema: Reservoir.Schema<Self> = Reservoir.Schema<Self>("tags", fields: [
                        .field(\\.id, column: "id"),
                        .field(\\.label, column: "label"),
                    ])
                static let rowMappedColumns: [String] = ["id", "label"]
                func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.id, column: "id"),
                        try Reservoir.Value.encoding(self.label, column: "label"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                init(row: borrowing Reservoir.Row) throws {
                    self.id = try row.decode("id", at: 0)
                    self.label = try row.decode("label", at: 1)
                }
                init(reader: borrowing Reservoir.RowReader) throws {
                    self.id = try reader.decode("id", at: 0)
                    self.label = try reader.decode("label", at: 1)
                }
                static var readsColumns: Bool {
                    true
                }
            }
            """
        )
        expand(
            """
            @Storable("tags")
            struct Tag {
                @Column("tag_id") var id: String
            }
            """,
            to: """
            struct Tag {
                var id: String

                private enum CodingKeys: String, CodingKey {
                    case id = "tag_id"
                }
            }

            extension Tag: Reservoir.Storable {
                static let schema: Reservoir.Schema<Self> = Reservoir.Schema<Self>("tags", idColumn: "tag_id", fields: [
                        .field(\\.id, column: "tag_id"),
                    ])
                static let rowMappedColumns: [String] = ["tag_id"]
                func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.id, column: "tag_id"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                init(row: borrowing Reservoir.Row) throws {
                    self.id = try row.decode("tag_id", at: 0)
                }
                init(reader: borrowing Reservoir.RowReader) throws {
                    self.id = try reader.decode("tag_id", at: 0)
                }
                static var readsColumns: Bool {
                    true
                }
            }
            """
        )
    }

    @Test("@Searchable asks the schema for folded shadow columns, with or without @Indexed")
    func searchable() {
        expand(
            """
            @Storable("notes")
            struct Note {
                var id: Int
                @Searchable var title: String
                @Indexed @Searchable var tag: String?
            }
            """,
            to: """
            struct Note {
                var id: Int
                var title: String
                var tag: String?
            }

            extension Note: Reservoir.Storable {
                static let schema: Reservoir.Schema<Self> = Reservoir.Schema<Self>("notes", fields: [
                        .field(\\.id, column: "id"),
                        .field(\\.title, column: "title", searchable: true),
                        .field(\\.tag, column: "tag", indexed: true, searchable: true),
                    ])
                static let rowMappedColumns: [String] = ["id", "title", "tag"]
                func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.id, column: "id"),
                        try Reservoir.Value.encoding(self.title, column: "title"),
                        try Reservoir.Value.encoding(self.tag, column: "tag"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                init(row: borrowing Reservoir.Row) throws {
                    self.id = try row.decode("id", at: 0)
                    self.title = try row.decode("title", at: 1)
                    self.tag = try row.decode("tag", at: 2)
                }
                init(reader: borrowing Reservoir.RowReader) throws {
                    self.id = try reader.decode("id", at: 0)
                    self.title = try reader.decode("title", at: 1)
                    self.tag = try reader.decode("tag", at: 2)
                }
                static var readsColumns: Bool {
                    true
                }
            }
            """
        )
        expand(
            """
            @Storable("notes")
            struct Note {
                var id: Int
                @Searchable @Transient var draft: String = ""
            }
            """,
            to: """
            struct Note {
                var id: Int
                var draft: String = ""
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "'draft' is @Transient, so it is not stored; remove @Searchable or @Transient", line: 4, column: 5),
            ]
        )
    }

    @Test("a generic struct builds its schema on each use: it cannot hold a static stored property")
    func genericStruct() {
        expand(
            """
            @Storable("boxes")
            struct Box<T: Codable & Sendable & Equatable> {
                var id: Int
                var content: T
            }
            """,
            to: """
            struct Box<T: Codable & Sendable & Equatable> {
                var id: Int
                var content: T
            }

            extension Box: Reservoir.Storable {
                static var schema: Reservoir.Schema<Self> {
                    Reservoir.Schema<Self>("boxes", fields: [
                            .field(\\.id, column: "id"),
                            .field(\\.content, column: "content"),
                        ])
                }
                func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.id, column: "id"),
                        try Reservoir.Value.encoding(self.content, column: "content"),
                    ]
                    return Reservoir.Row(columns: ["id", "content"], values: values)
                }
                init(row: borrowing Reservoir.Row) throws {
                    self.id = try row.decode("id", at: 0)
                    self.content = try row.decode("content", at: 1)
                }
                init(reader: borrowing Reservoir.RowReader) throws {
                    self.id = try reader.decode("id", at: 0)
                    self.content = try reader.decode("content", at: 1)
                }
                static var readsColumns: Bool {
                    true
                }
            }
            """
        )
    }

    @Test("CodingKeys of the struct's own choose the columns; @Column agrees with them; what they leave out is named")
    func ownCodingKeys() {
        expand(
            """
            @Storable("notes")
            struct Note {
                var id: String
                @Column("heading") var title: String
                @Transient var draft: String?
                var cache: Int = 0
                enum CodingKeys: String, CodingKey {
                    case title = "heading", id
                }
            }
            """,
            to: """
            struct Note {
                var id: String
                var title: String
                var draft: String?
                var cache: Int = 0
                enum CodingKeys: String, CodingKey {
                    case title = "heading", id
                }
            }

            extension Note: Reservoir.Storable {
                static let schema: Reservoir.Schema<Self> = Reservoir.Schema<Self>("notes", fields: [
                        .field(\\.title, column: "heading"),
                        .field(\\.id, column: "id"),
                    ]).naming(unstored: [
                        .transient(\\.draft, "draft"),
                        .notInCodingKeys(\\.cache, "cache"),
                    ])
                static let rowMappedColumns: [String] = ["heading", "id"]
                func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.title, column: "heading"),
                        try Reservoir.Value.encoding(self.id, column: "id"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                init(row: borrowing Reservoir.Row) throws {
                    self.title = try row.decode("heading", at: 0)
                    self.id = try row.decode("id", at: 1)
                }
                init(reader: borrowing Reservoir.RowReader) throws {
                    self.title = try reader.decode("heading", at: 0)
                    self.id = try reader.decode("id", at: 1)
                }
                static var readsColumns: Bool {
                    true
                }
            }
            """
        )
    }
}
