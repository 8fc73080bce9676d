import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// What `@Storable` and its member attributes refuse, and the diagnostics (with fix-its) they give.
@Suite("@Storable refusals")
struct StorableRefusalTests {
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
                init(reader: borrowing Reservoir.RowReader) throws {
                    self.id = try reader.decode("id", at: 0)
                }
                static var readsColumns: Bool {
                    true
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
