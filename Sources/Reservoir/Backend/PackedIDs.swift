import Foundation

/// A list of record ids as bytes, the form change logs store a group of ids in (SQLite's
/// `ids` column, PostgreSQL's change log, the groups of a ``ChangeLogCodec`` record): the
/// ids back to back, each a tag byte (0 null, 1 integer, 2 real, 3 text, 4 blob) then,
/// big-endian, 8 bytes for numbers or a 4-byte length and the bytes for text (UTF-8) and
/// blobs. An integer id is the tag then PostgreSQL's `int8send`, so SQL triggers can write
/// the format too. Tag 5 is an integer as a zigzag varint (1 to 10 bytes): the compact form
/// ``ChangeLogCodec`` records use, where a bulk insert's small ids would otherwise take 9
/// bytes each; readers take both forms.
public enum PackedIDs {
    /// The bytes of `ids`, in order.
    public static func pack(_ ids: some Collection<Value>) -> Data {
        var size = 0
        for id in ids { size += self.size(id) }
        var data = Data(count: size)
        data.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var end = 0
            for id in ids { end += write(id, to: base + end) }
        }
        return data
    }

    /// The bytes of a change-log group's ids, read in place from the change set.
    public static func pack(_ ids: ChangeLogCodec.GroupIDs) -> Data {
        var size = 0
        ids.forEachID { size += self.size($0) }
        var data = Data(count: size)
        data.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var end = 0
            ids.forEachID { end += write($0, to: base + end) }
        }
        return data
    }

    /// The ids, or nil when `data` is not a packed list.
    public static func unpack(_ data: Data) -> [Value]? {
        data.withUnsafeBytes { bytes in
            var position = 0
            var ids: [Value] = []
            while position < bytes.count {
                guard let id = read(bytes, at: &position) else { return nil }
                ids.append(id)
            }
            return ids
        }
    }

    // MARK: - One id

    /// The number of bytes ``write(_:to:compact:)`` writes for `id`.
    @inline(__always)
    static func size(_ id: Value, compact: Bool = false) -> Int {
        switch id {
        case .null: 1
        case let .integer(integer) where compact: 1 + varintLength(zigzag(integer))
        case .integer, .real: 9
        case let .text(text): 5 + text.utf8.count
        case let .blob(data): 5 + data.count
        }
    }

    /// Writes `id` at `base` and returns the number of bytes written (``size(_:compact:)``);
    /// `compact` writes an integer with tag 5.
    @inline(__always)
    static func write(_ id: Value, to base: UnsafeMutableRawPointer, compact: Bool = false) -> Int {
        func put<Word: FixedWidthInteger>(_ word: Word, at offset: Int) {
            (base + offset).storeBytes(of: word.bigEndian, as: Word.self)
        }
        switch id {
        case .null:
            base.storeBytes(of: 0, as: UInt8.self)
            return 1
        case let .integer(integer) where compact:
            base.storeBytes(of: 5, as: UInt8.self)
            var rest = zigzag(integer)
            var offset = 1
            while rest >= 0x80 {
                base.storeBytes(of: UInt8(truncatingIfNeeded: rest) | 0x80, toByteOffset: offset, as: UInt8.self)
                rest >>= 7
                offset += 1
            }
            base.storeBytes(of: UInt8(rest), toByteOffset: offset, as: UInt8.self)
            return offset + 1
        case let .integer(integer):
            base.storeBytes(of: 1, as: UInt8.self)
            put(UInt64(bitPattern: integer), at: 1)
            return 9
        case let .real(real):
            base.storeBytes(of: 2, as: UInt8.self)
            put(real.bitPattern, at: 1)
            return 9
        case var .text(text):
            base.storeBytes(of: 3, as: UInt8.self)
            return text.withUTF8 { utf8 in
                put(UInt32(truncatingIfNeeded: utf8.count), at: 1)
                if let source = utf8.baseAddress { (base + 5).copyMemory(from: source, byteCount: utf8.count) }
                return 5 + utf8.count
            }
        case let .blob(data):
            base.storeBytes(of: 4, as: UInt8.self)
            put(UInt32(truncatingIfNeeded: data.count), at: 1)
            data.copyBytes(to: (base + 5).assumingMemoryBound(to: UInt8.self), count: data.count)
            return 5 + data.count
        }
    }

    /// Reads the id at `position` in `bytes` and steps past it; nil when the bytes there
    /// are not a whole id.
    @inline(__always)
    static func read(_ bytes: UnsafeRawBufferPointer, at position: inout Int) -> Value? {
        guard position < bytes.count else { return nil }
        let tag = bytes[position]
        position += 1
        func word(_ count: Int) -> UInt64? {
            guard bytes.count - position >= count else { return nil }
            var word: UInt64 = 0
            for offset in position..<(position + count) { word = word << 8 | UInt64(bytes[offset]) }
            position += count
            return word
        }
        func payload() -> UnsafeRawBufferPointer? {
            guard let length = word(4), UInt64(bytes.count - position) >= length else { return nil }
            defer { position += Int(length) }
            return UnsafeRawBufferPointer(rebasing: bytes[position..<(position + Int(length))])
        }
        switch tag {
        case 0:
            return .null
        case 1:
            return word(8).map { .integer(Int64(bitPattern: $0)) }
        case 2:
            return word(8).map { .real(Double(bitPattern: $0)) }
        case 3:
            return payload().map { .text(String(decoding: $0, as: UTF8.self)) }
        case 4:
            return payload().map { .blob(Data($0)) }
        case 5:
            return readVarint(bytes, at: &position).map { .integer(Int64(bitPattern: $0 >> 1) ^ -Int64(bitPattern: $0 & 1)) }
        default:
            return nil
        }
    }

    /// Reads the varint at `position` and steps past it; nil when the bytes end first.
    /// Package-visible and inlinable for the LMDB backend's row reader, which reads the same varints.
    @inlinable
    package static func readVarint(_ bytes: UnsafeRawBufferPointer, at position: inout Int) -> UInt64? {
        var word: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.count, shift < 64 {
            let byte = bytes[position]
            position += 1
            word |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return word }
            shift += 7
        }
        return nil
    }

    @inline(__always)
    private static func zigzag(_ integer: Int64) -> UInt64 { UInt64(bitPattern: (integer << 1) ^ (integer >> 63)) }

    /// Bytes of a varint: one per 7 significant bits, at least one.
    @inline(__always)
    static func varintLength(_ value: UInt64) -> Int { (64 - (value | 1).leadingZeroBitCount + 6) / 7 }
}
