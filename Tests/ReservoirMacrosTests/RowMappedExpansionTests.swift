import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite("@RowMapped expansion")
struct RowMappedExpansionTests {
    @Test("a public struct gets public members, one value and one assignment per stored property")
    func publicStruct() {
        expand(
            """
            @RowMapped
            public struct Note: Storable {
                public var id: Int
                public var title: String
                let kind = "note"
                var size: Int { title.count }
                static let schema = Schema<Note>("notes")
            }
            """,
            to: """
            public struct Note: Storable {
                public var id: Int
                public var title: String
                let kind = "note"
                var size: Int { title.count }
                static let schema = Schema<Note>("notes")
            }

            extension Note {
                public static let rowMappedColumns: [String] = ["id", "title", "kind"]
                public func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.id, column: "id"),
                        try Reservoir.Value.encoding(self.title, column: "title"),
                        try Reservoir.Value.encoding(self.kind, column: "kind"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                public init(row: borrowing Reservoir.Row) throws {
                    self.id = try row.decode("id", at: 0)
                    self.title = try row.decode("title", at: 1)
                }
                public init(reader: borrowing Reservoir.RowReader) throws {
                    self.id = try reader.decode("id", at: 0)
                    self.title = try reader.decode("title", at: 1)
                }
                public static var readsColumns: Bool {
                    true
                }
            }
            """
        )
    }

    @Test("CodingKeys with raw values choose and order the columns")
    func codingKeys() {
        expand(
            """
            @RowMapped
            struct Note: Storable {
                var id: Int
                var title: String
                var cached: Int = 0
                enum CodingKeys: String, CodingKey {
                    case title = "heading \\"quoted\\"", id
                }
            }
            """,
            to: """
            struct Note: Storable {
                var id: Int
                var title: String
                var cached: Int = 0
                enum CodingKeys: String, CodingKey {
                    case title = "heading \\"quoted\\"", id
                }
            }

            extension Note {
                static let rowMappedColumns: [String] = [#"heading "quoted""#, "id"]
                func makeRow() throws -> Reservoir.Row {
                    let values: [Reservoir.Value] = [
                        try Reservoir.Value.encoding(self.title, column: #"heading "quoted""#),
                        try Reservoir.Value.encoding(self.id, column: "id"),
                    ]
                    return Reservoir.Row(columns: Self.rowMappedColumns, values: values)
                }
                init(row: borrowing Reservoir.Row) throws {
                    self.title = try row.decode(#"heading "quoted""#, at: 0)
                    self.id = try row.decode("id", at: 1)
                }
                init(reader: borrowing Reservoir.RowReader) throws {
                    self.title = try reader.decode(#"heading "quoted""#, at: 0)
                    self.id = try reader.decode("id", at: 1)
                }
                static var readsColumns: Bool {
                    true
                }
            }
            """
        )
    }

    @Test("a generic struct spells its columns in place: it cannot hold a static stored property")
    func genericStruct() {
        expand(
            """
            @RowMapped
            struct Box<T: Codable>: Storable {
                var id: Int
                var content: T
            }
            """,
            to: """
            struct Box<T: Codable>: Storable {
                var id: Int
                var content: T
            }

            extension Box {
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

    @Test("what synthesized Codable would map differently is refused at the attribute or the member")
    func refusals() {
        expand(
            """
            @RowMapped
            class Note {
                var id = 0
            }
            """,
            to: """
            class Note {
                var id = 0
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@RowMapped applies to a struct, not to a class; write makeRow() and init(row:) by hand", line: 1, column: 1)]
        )
        expand(
            """
            @RowMapped
            struct Note {
                var id = 0
                @Clamped var level = 1
                lazy var cache = 2
                var (a, b) = (1, 2)
                func encode(to encoder: any Encoder) throws {}
            }
            """,
            to: """
            struct Note {
                var id = 0
                @Clamped var level = 1
                lazy var cache = 2
                var (a, b) = (1, 2)
                func encode(to encoder: any Encoder) throws {}
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@RowMapped cannot map 'level': synthesized Codable encodes a property wrapper itself, not its wrapped value; write makeRow() and init(row:) by hand", line: 4, column: 5),
                DiagnosticSpec(message: "@RowMapped cannot map the lazy property 'cache'; make it a computed or a plain stored property", line: 5, column: 14),
                DiagnosticSpec(message: "@RowMapped needs one name per stored property; declare each on its own instead of through a tuple pattern", line: 6, column: 9),
                DiagnosticSpec(message: "@RowMapped maps stored properties the way synthesized Codable does, but this type writes its own encode(to:); write makeRow() and init(row:) by hand to match it", line: 7, column: 10),
            ]
        )
    }
}
