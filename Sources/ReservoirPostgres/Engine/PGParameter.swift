import CLibPQ
import Foundation
import Reservoir

/// A statement parameter, sent in PostgreSQL's binary format. The SQL casts each
/// placeholder (`$1::bigint`), so the server knows its type when preparing.
enum PGParameter: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    /// Text without NUL characters (PostgreSQL's `text` cannot hold one).
    case text(String)
    case bytes([UInt8])

    init(blob data: Data) {
        self = .bytes([UInt8](data))
    }

    var count: Int {
        switch self {
        case .null: 0
        case .integer, .real: 8
        case let .text(text): text.utf8.count
        case let .bytes(bytes): bytes.count
        }
    }

    private func write(to out: UnsafeMutableRawBufferPointer) {
        switch self {
        case .null:
            break
        case let .integer(value):
            out.storeBytes(of: value.bigEndian, as: Int64.self)
        case let .real(value):
            out.storeBytes(of: value.bitPattern.bigEndian, as: UInt64.self)
        case var .text(text):
            text.withUTF8 { out.copyMemory(from: UnsafeRawBufferPointer($0)) }
        case let .bytes(bytes):
            bytes.withUnsafeBytes { out.copyMemory(from: $0) }
        }
    }

    /// Appends the value as one field of a binary `COPY` row: its length (-1 for null), then
    /// the bytes, as in a binary parameter.
    func appendField(to buffer: CopyBuffer) {
        switch self {
        case .null:
            buffer.appendBigEndian(Int32(-1))
        case let .integer(value):
            buffer.appendField(value)
        case let .real(value):
            buffer.appendField(value.bitPattern)
        case var .text(text):
            text.withUTF8 { buffer.appendField(UnsafeRawBufferPointer($0)) }
        case let .bytes(bytes):
            bytes.withUnsafeBytes { buffer.appendField($0) }
        }
    }

    /// Calls `body` with libpq's parallel arrays (values, lengths, formats) for `parameters`:
    /// the three arrays and every value's bytes in one allocation (four arrays a statement,
    /// made and freed, cost a commit about a tenth of its client time).
    static func withBound<R>(
        _ parameters: [PGParameter],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> R
    ) rethrows -> R {
        let count = parameters.count
        if count == 0 { return try body(nil, nil, nil) }
        var total = 0
        for parameter in parameters { total += parameter.count }
        // Pointers first (8-byte aligned), then lengths and formats (4-byte), then the bytes.
        let pointerBytes = count * MemoryLayout<UnsafePointer<CChar>?>.stride
        let integerBytes = count * MemoryLayout<Int32>.stride
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: pointerBytes + 2 * integerBytes + max(total, 1), alignment: 8)
        defer { storage.deallocate() }
        guard let base = storage.baseAddress else { return try body(nil, nil, nil) }
        let values = base.bindMemory(to: UnsafePointer<CChar>?.self, capacity: count)
        let lengths = (base + pointerBytes).bindMemory(to: Int32.self, capacity: count)
        let formats = (base + pointerBytes + integerBytes).bindMemory(to: Int32.self, capacity: count)
        let bytes = base + pointerBytes + 2 * integerBytes
        var offset = 0
        for (index, parameter) in parameters.enumerated() {
            let length = parameter.count
            parameter.write(to: UnsafeMutableRawBufferPointer(start: bytes + offset, count: length))
            (values + index).initialize(to: parameter.isNull ? nil : UnsafePointer((bytes + offset).assumingMemoryBound(to: CChar.self)))
            (lengths + index).initialize(to: Int32(truncatingIfNeeded: length))
            (formats + index).initialize(to: 1)
            offset += length
        }
        return try body(UnsafePointer(values), UnsafePointer(lengths), UnsafePointer(formats))
    }

    private var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

/// PostgreSQL's errors as ``ReservoirError``s. The native code is the SQLSTATE packed the
/// way the server packs it (six bits a character); the native message starts with the
/// SQLSTATE itself, so both are in every message a person reads.
enum PGFailure {
    static func packed(_ sqlstate: String) -> Int32 {
        var code: Int32 = 0
        for (i, byte) in sqlstate.utf8.prefix(5).enumerated() {
            code |= Int32((byte &- UInt8(ascii: "0")) & 0x3F) << (6 * i)
        }
        return code
    }

    static func error(result: OpaquePointer, connection: PGConnection, sql: String) -> ReservoirError {
        let sqlstate = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        var message = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            ?? PGConnection.message(PQresultErrorMessage(result))
        if message.isEmpty { message = PGConnection.message(PQerrorMessage(connection.handle)) }
        let code: ReservoirError.Code
        let cause: String
        switch sqlstate {
        case "23505":
            code = .duplicateID
            cause = message
        case "40001", "40P01", "55P03", "57014":
            code = .busy
            cause = "the server gave up waiting for another transaction (\(message))"
        case "53100":
            code = .full
            cause = "the server's disk is full (\(message))"
        case "42501":
            code = .cannotOpen
            cause = "the server refused permission (\(message)); the role needs CREATE on the database and the schema, and the right to read and write the store's tables"
        case let state where state.hasPrefix("23") || state == "P0001":
            // A constraint (not null, check, foreign key, exclusion) or a trigger's RAISE.
            code = .refused
            cause = message
        case "42P07":
            code = .invalidSchema
            cause = message
        case "XX001", "XX002":
            code = .corrupt
            cause = message
        case let state where state.hasPrefix("22"):
            code = .valueOutOfRange
            cause = message
        case let state where state.hasPrefix("08") || state.hasPrefix("57P"):
            code = .backend
            cause = "the connection to the server was lost (\(message))"
        case "":
            code = .backend
            cause = connectionCause(message)
        default:
            code = .backend
            cause = message
        }
        return ReservoirError(code, "\(connection.name): \(cause)",
                              nativeCode: sqlstate.isEmpty ? nil : packed(sqlstate),
                              nativeMessage: sqlstate.isEmpty ? message : "SQLSTATE \(sqlstate): \(message)")
    }

    /// Whether `result` is libpq's report of a lost connection (no SQLSTATE, or class 08)
    /// rather than the server refusing a statement.
    static func isConnectionLoss(_ result: OpaquePointer) -> Bool {
        let sqlstate = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        return sqlstate.isEmpty || sqlstate.hasPrefix("08")
    }

    /// What a failed connection attempt means, in words, followed by libpq's message.
    static func connectCause(_ message: String) -> String {
        let lower = message.lowercased()
        let hint: String
        if lower.contains("password authentication failed") || lower.contains("no password supplied") {
            hint = "the server refused the user name or password"
        } else if lower.contains("does not exist") && lower.contains("role") {
            hint = "the server has no such user (role)"
        } else if lower.contains("does not exist") && lower.contains("database") {
            hint = "the database does not exist (create it with createdb, or name another)"
        } else if lower.contains("connection refused") || lower.contains("no such file or directory") {
            hint = "no PostgreSQL server is listening there (is it running, and on that host and port?)"
        } else if lower.contains("timeout expired") || lower.contains("timed out") {
            hint = "the server did not answer in time"
        } else if lower.contains("could not translate host name") {
            hint = "the host name is unknown"
        } else {
            hint = "the server refused the connection"
        }
        return "\(hint): \(message)"
    }

    static func connectionCause(_ message: String) -> String {
        message.isEmpty ? "the connection to the server was lost" : "the connection to the server failed: \(message)"
    }
}
