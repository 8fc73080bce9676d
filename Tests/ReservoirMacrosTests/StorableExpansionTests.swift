import SwiftSyntaxMacrosGenericTestSupport
import Testing

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
            }
            """
        )
    }

    @Test("refused at the attribute: not a struct, no entity name or a bad one, a hand-written schema, no stored id")
    func refusedAtTheAttribute() {
        expand(
            """
            @Storable("notes")
            class Note {
                var id = 0
            }
            """,
            to: """
            class Note {
                var id = 0
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Storable applies to a struct, not to a class; declare a struct, or conform to Storable and write its schema by hand", line: 1, column: 1)]
        )
        expand(
            """
            @Storable(name)
            struct Note {
                var id = 0
            }
            """,
            to: """
            struct Note {
                var id = 0
            }
            """,
            diagnostics: [DiagnosticSpec(message: #"@Storable needs the entity name as one string literal, such as @Storable("messages")"#, line: 1, column: 1)]
        )
        expand(
            """
            @Storable("my notes")
            struct Note {
                var id = 0
            }
            """,
            to: """
            struct Note {
                var id = 0
            }
            """,
            diagnostics: [DiagnosticSpec(message: #"entity name "my notes" is not valid; expected letters, digits and _, not starting with a digit"#, line: 1, column: 11)]
        )
        expand(
            """
            @Storable("notes")
            struct Note {
                var id = 0
                static let schema = Schema<Note>("notes")
            }
            """,
            to: """
            struct Note {
                var id = 0
                static let schema = Schema<Note>("notes")
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Storable writes 'schema' from the stored properties; remove this one, or keep it and use @RowMapped instead, which maps rows and leaves the schema to you", line: 4, column: 5)]
        )
        expand(
            """
            @Storable("notes")
            struct Note {
                var id: Int { 1 }
                var title = ""
            }
            """,
            to: """
            struct Note {
                var id: Int { 1 }
                var title = ""
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Storable stores each record under its id: declare a stored property 'id' (UUID, String or Int) that is stored", line: 1, column: 1)]
        )
    }

    @Test("refused at the member: @Transient without a default, attributes that disagree with each other or with CodingKeys")
    func refusedAtTheMember() {
        expand(
            """
            @Storable("notes")
            struct Note {
                var id: String
                @Transient var count: Int
                @Transient let seen: Bool?
                @Transient var hint: String?
                @Indexed @Transient var rank = 1
                @Column(name) var title: String
                @Column("a") var first: Int
                @Column("a") var second: Int
                @Column("two words") var third: Int
            }
            """,
            to: """
            struct Note {
                var id: String
                var count: Int
                let seen: Bool?
                var hint: String?
                var rank = 1
                var title: String
                var first: Int
                var second: Int
                var third: Int
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@Transient 'count' is not stored, so reading a record cannot set it: give it a default value", line: 4, column: 5),
                DiagnosticSpec(message: "@Transient 'seen' is not stored, so reading a record cannot set it: give it a default value", line: 5, column: 5),
                DiagnosticSpec(message: "'rank' is @Transient, so it is not stored; remove @Indexed or @Transient", line: 7, column: 5),
                DiagnosticSpec(message: #"@Column needs the column name as one string literal, such as @Column("sent_at")"#, line: 8, column: 5),
                DiagnosticSpec(message: #"'first' and 'second' are both stored in column "a"; give one of them a @Column name of its own"#, line: 10, column: 22),
                DiagnosticSpec(message: #"column "two words" is not valid; expected letters, digits and _, not starting with a digit"#, line: 11, column: 5),
            ]
        )
        expand(
            """
            @Storable("notes")
            struct Note {
                var id: String
                @Column("name") var title: String
                @Transient var draft = ""
                @Column("rank") var position = 0
                @Indexed var size = 0
                enum CodingKeys: String, CodingKey {
                    case id, title = "heading", draft
                }
            }
            """,
            to: """
            struct Note {
                var id: String
                var title: String
                var draft = ""
                var position = 0
                var size = 0
                enum CodingKeys: String, CodingKey {
                    case id, title = "heading", draft
                }
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: #"@Column("name") stores 'title' as "name", but CodingKeys encodes it as "heading"; make them agree (case title = "name"), or remove @Column"#, line: 4, column: 5),
                DiagnosticSpec(message: "'draft' is @Transient, but CodingKeys lists it, so Codable would store it; remove its case from CodingKeys, or remove @Transient", line: 5, column: 5),
                DiagnosticSpec(message: "@Column on 'position', which CodingKeys leaves out, so it is not stored; add its case to CodingKeys, or remove @Column", line: 6, column: 5),
                DiagnosticSpec(message: "@Indexed on 'size', which CodingKeys leaves out, so it is not stored; add its case to CodingKeys, or remove @Indexed", line: 7, column: 5),
            ]
        )
    }

    @Test("what @RowMapped refuses, @Storable refuses in its own name")
    func rowMappedRefusals() {
        expand(
            """
            @Storable("notes")
            struct Note {
                var id = 0
                @Clamped var level = 1
                lazy var cache = 2
                init(from decoder: any Decoder) throws {}
            }
            """,
            to: """
            struct Note {
                var id = 0
                @Clamped var level = 1
                lazy var cache = 2
                init(from decoder: any Decoder) throws {}
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@Storable cannot map 'level': synthesized Codable encodes a property wrapper itself, not its wrapped value; write makeRow() and init(row:) by hand", line: 4, column: 5),
                DiagnosticSpec(message: "@Storable cannot map the lazy property 'cache'; make it a computed or a plain stored property", line: 5, column: 14),
                DiagnosticSpec(message: "@Storable maps stored properties the way synthesized Codable does, but this type writes its own init(from:); write makeRow() and init(row:) by hand to match it", line: 6, column: 5),
            ]
        )
    }

    @Test("@Indexed, @Transient and @Column on their own: refused where @Storable would not see them")
    func attributesOutOfPlace() {
        expand(
            """
            struct Plain {
                @Indexed var rank = 1
            }
            @Storable("notes")
            struct Note {
                var id = 0
                @Transient var size: Int { 1 }
                @Column("k") static var kind = 0
                @Indexed func rank() -> Int { 1 }
            }
            """,
            to: """
            struct Plain {
                var rank = 1
            }
            struct Note {
                var id = 0
                var size: Int { 1 }
                static var kind = 0
                func rank() -> Int { 1 }
            }

            extension Note: Reservoir.Storable {
                static let schema: Reservoir.Schema<Self> = Reservoir.Schema<Self>("notes", fields: [
                        .field(\\.id, column: "id"),
                    ]).naming(unstored: [
                        .computed(\\.size, "size"),
                    ])
                static let rowMappedColumns: [String] = ["id"]
                func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.id, column: "id"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                init(row: borrowing Reservoir.Row) throws {
                    self.id = try row.decode("id", at: 0)
                }
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: #"@Indexed has an effect only on a stored property of a struct declared @Storable("name")"#, line: 2, column: 5),
                DiagnosticSpec(message: "@Transient has no effect on 'size', a computed property, which is never stored", line: 7, column: 5),
                DiagnosticSpec(message: "@Column has no effect on a static property, which is never stored with a record", line: 8, column: 5),
                DiagnosticSpec(message: "@Indexed applies to a stored property of a @Storable struct", line: 9, column: 5),
            ]
        )
    }
}
