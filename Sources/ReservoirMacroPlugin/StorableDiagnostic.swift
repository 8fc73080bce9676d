import SwiftDiagnostics

/// What `@Storable` refuses, each message saying what to change.
enum StorableDiagnostic: DiagnosticMessage {
    case notAStruct(kind: String)
    case entityName
    case invalidName(String, String)
    case handWrittenSchema
    case missingID
    case transientNeedsDefault(String)
    case transientAndStored(String, String)
    case transientInCodingKeys(String)
    case columnNotLiteral
    case columnDisagrees(String, String, String)
    case notInCodingKeys(String, String)
    case duplicateColumn(String, String, String)
    case unparsable(String)

    var message: String {
        switch self {
        case let .notAStruct(kind):
            "@Storable applies to a struct, not to \(kind); declare a struct, or conform to Storable and write its schema by hand"
        case .entityName:
            "@Storable needs the entity name as one string literal, such as @Storable(\"messages\")"
        case let .invalidName(what, name):
            "\(what) \"\(name)\" is not valid; expected letters, digits and _, not starting with a digit"
        case .handWrittenSchema:
            "@Storable writes 'schema' from the stored properties; remove this one, or keep it and use @RowMapped instead, which maps rows and leaves the schema to you"
        case .missingID:
            "@Storable stores each record under its id: declare a stored property 'id' (UUID, String or Int) that is stored"
        case let .transientNeedsDefault(name):
            "@Transient '\(name)' is not stored, so reading a record cannot set it: give it a default value"
        case let .transientAndStored(name, attribute):
            "'\(name)' is @Transient, so it is not stored; remove @\(attribute) or @Transient"
        case let .transientInCodingKeys(name):
            "'\(name)' is @Transient, but CodingKeys lists it, so Codable would store it; remove its case from CodingKeys, or remove @Transient"
        case .columnNotLiteral:
            "@Column needs the column name as one string literal, such as @Column(\"sent_at\")"
        case let .columnDisagrees(name, column, key):
            "@Column(\"\(column)\") stores '\(name)' as \"\(column)\", but CodingKeys encodes it as \"\(key)\"; make them agree (case \(name) = \"\(column)\"), or remove @Column"
        case let .notInCodingKeys(name, attribute):
            "@\(attribute) on '\(name)', which CodingKeys leaves out, so it is not stored; add its case to CodingKeys, or remove @\(attribute)"
        case let .duplicateColumn(column, first, second):
            "'\(first)' and '\(second)' are both stored in column \"\(column)\"; give one of them a @Column name of its own"
        case let .unparsable(type):
            "@Storable could not build an extension of '\(type)'; conform to Storable and write its schema by hand"
        }
    }

    var diagnosticID: MessageID {
        let id = switch self {
        case .notAStruct: "notAStruct"
        case .entityName: "entityName"
        case .invalidName: "invalidName"
        case .handWrittenSchema: "handWrittenSchema"
        case .missingID: "missingID"
        case .transientNeedsDefault: "transientNeedsDefault"
        case .transientAndStored: "transientAndStored"
        case .transientInCodingKeys: "transientInCodingKeys"
        case .columnNotLiteral: "columnNotLiteral"
        case .columnDisagrees: "columnDisagrees"
        case .notInCodingKeys: "notInCodingKeys"
        case .duplicateColumn: "duplicateColumn"
        case .unparsable: "unparsable"
        }
        return MessageID(domain: "Reservoir.Storable", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
