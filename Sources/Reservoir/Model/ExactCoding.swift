import Foundation

/// Rows and values as bytes, exact: a value reads back as the same case with the same payload
/// (`.integer(1)` stays an integer, a real keeps its bits), which the ordering key encoding
/// (``KeyEncoding``) does not promise. A sync replica keeps its base rows and outbox in the local
/// store's metadata so; a ``CommitAnnouncement`` carries its rows so.
///
///     value: tag (0 null, 1 integer, 2 real, 3 text, 4 blob), then for integer and real
///            8 bytes big-endian (a real's bit pattern), for text and blob a length then bytes
///     row:   a column count, then each column's name (as text, without the tag) and value
///     length and count: unsigned LEB128
enum ExactCoding {
    static func encode(_ value: Value, into bytes: inout [UInt8]) {
        switch value {
        case .null: bytes.append(0)
        case let .integer(integer): bytes.append(1); appendFixed(UInt64(bitPattern: integer), &bytes)
        case let .real(real): bytes.append(2); appendFixed(real.bitPattern, &bytes)
        case let .text(text): bytes.append(3); appendText(text, &bytes)
        case let .blob(blob): bytes.append(4); appendBytes(blob, &bytes)
        }
    }

    static func encode(_ row: Row) -> Data {
        var bytes: [UInt8] = []
        encode(row, into: &bytes)
        return Data(bytes)
    }

    static func encode(_ row: Row, into bytes: inout [UInt8]) {
        appendNumber(UInt64(row.count), &bytes)
        for (column, value) in zip(row.columns, row.values) {
            appendText(column, &bytes)
            encode(value, into: &bytes)
        }
    }

    static func encode(_ value: Value) -> Data {
        var bytes: [UInt8] = []
        encode(value, into: &bytes)
        return Data(bytes)
    }

    /// The row in `data`, or `.corrupt` naming `what` when the bytes are not one.
    static func decodeRow(_ data: Data, _ what: @autoclosure () -> String) throws -> Row {
        var reader = ByteReader(bytes: [UInt8](data))
        guard let row = reader.row(), reader.isAtEnd else { throw corrupt(what()) }
        return row
    }

    static func decodeValue(_ data: Data, _ what: @autoclosure () -> String) throws -> Value {
        var reader = ByteReader(bytes: [UInt8](data))
        guard let value = reader.value(), reader.isAtEnd else { throw corrupt(what()) }
        return value
    }

    private static func corrupt(_ what: String) -> ReservoirError {
        ReservoirError(.corrupt, "\(what) in the local store's metadata is damaged; expected the bytes this library writes there (delete the replica's metadata by starting a new replica in a fresh store)")
    }

    /// The eight bytes of `number`, most significant first.
    static func appendFixed(_ number: UInt64, _ bytes: inout [UInt8]) {
        withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) }
    }

    static func appendNumber(_ number: UInt64, _ bytes: inout [UInt8]) {
        var rest = number
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// `payload`'s length, then its bytes.
    static func appendBytes<Payload: Collection<UInt8>>(_ payload: Payload, _ bytes: inout [UInt8]) {
        appendNumber(UInt64(payload.count), &bytes)
        bytes.append(contentsOf: payload)
    }

    /// `text`'s UTF-8 as ``appendBytes(_:_:)`` writes it, without copying it into an array first.
    static func appendText(_ text: String, _ bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendBytes($0, &bytes) }
    }

    struct ByteReader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        /// An unsigned LEB128 number, the varint ``PackedIDs`` reads too.
        mutating func number() -> UInt64? {
            bytes.withUnsafeBytes { PackedIDs.readVarint($0, at: &offset) }
        }

        mutating func fixed() -> UInt64? {
            guard bytes.count - offset >= 8 else { return nil }
            var result: UInt64 = 0
            for byte in bytes[offset..<offset + 8] { result = result << 8 | UInt64(byte) }
            offset += 8
            return result
        }

        mutating func chunk() -> [UInt8]? {
            guard let count = number(), count <= UInt64(bytes.count - offset) else { return nil }
            defer { offset += Int(count) }
            return Array(bytes[offset..<offset + Int(count)])
        }

        /// A row (``encode(_:into:)``), nil when the bytes are not one (also a repeated column).
        mutating func row() -> Row? {
            guard let count = number(), count <= UInt64(bytes.count - offset) else { return nil }
            var columns: [String] = []
            var values: [Value] = []
            for _ in 0..<count {
                guard let name = chunk().flatMap({ String(validating: $0, as: UTF8.self) }), let value = value() else { return nil }
                columns.append(name)
                values.append(value)
            }
            guard Self.allDistinct(columns) else { return nil }
            return Row(columns: columns, values: values)
        }

        /// Whether no name repeats: compared pairwise for the few columns of a usual row (a
        /// `Set` hashes every name, a few thousand instructions per row decoded).
        private static func allDistinct(_ names: [String]) -> Bool {
            guard names.count > 16 else {
                for index in names.indices.dropFirst() where names[..<index].contains(names[index]) { return false }
                return true
            }
            return Set(names).count == names.count
        }

        mutating func value() -> Value? {
            guard offset < bytes.count else { return nil }
            let tag = bytes[offset]
            offset += 1
            switch tag {
            case 0: return .null
            case 1: return fixed().map { .integer(Int64(bitPattern: $0)) }
            case 2: return fixed().map { .real(Double(bitPattern: $0)) }
            case 3: return chunk().flatMap { String(validating: $0, as: UTF8.self) }.map(Value.text)
            case 4: return chunk().map { .blob(Data($0)) }
            default: return nil
            }
        }
    }
}
