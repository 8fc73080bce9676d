import Foundation

/// A list of record ids as bytes, the form change logs store a group of ids in (SQLite's
/// `ids` column, PostgreSQL's change log): the ids back to back, each a tag byte
/// (0 null, 1 integer, 2 real, 3 text, 4 blob) then, big-endian, 8 bytes for numbers
/// or a 4-byte length and the bytes for text (UTF-8) and blobs. An integer id is the tag
/// then PostgreSQL's `int8send`, so SQL triggers can write the format too.
public enum PackedIDs {
    /// The bytes of `ids`, in order.
    public static func pack(_ ids: some Collection<Value>) -> Data {
        // Written through a pointer into a buffer sized for integer ids (a bulk insert packs
        // one per record), grown when text or blobs need more.
        var bytes = [UInt8](repeating: 0, count: ids.count * 9)
        var end = 0
        for id in ids {
            var needed = 9
            switch id {
            case .null: needed = 1
            case let .text(text): needed = 5 + text.utf8.count
            case let .blob(data): needed = 5 + data.count
            case .integer, .real: break
            }
            if bytes.count - end < needed {
                bytes.append(contentsOf: repeatElement(0, count: max(needed, bytes.count)))
            }
            bytes.withUnsafeMutableBytes { buffer in
                func put<Word: FixedWidthInteger>(_ word: Word, at offset: Int) {
                    buffer.storeBytes(of: word.bigEndian, toByteOffset: offset, as: Word.self)
                }
                switch id {
                case .null:
                    buffer[end] = 0
                case let .integer(integer):
                    buffer[end] = 1
                    put(UInt64(bitPattern: integer), at: end + 1)
                case let .real(real):
                    buffer[end] = 2
                    put(real.bitPattern, at: end + 1)
                case var .text(text):
                    buffer[end] = 3
                    text.withUTF8 { utf8 in
                        put(UInt32(truncatingIfNeeded: utf8.count), at: end + 1)
                        UnsafeMutableRawBufferPointer(rebasing: buffer[(end + 5)...]).copyMemory(from: UnsafeRawBufferPointer(utf8))
                    }
                case let .blob(data):
                    buffer[end] = 4
                    put(UInt32(truncatingIfNeeded: data.count), at: end + 1)
                    UnsafeMutableRawBufferPointer(rebasing: buffer[(end + 5)...]).copyBytes(from: data)
                }
            }
            end += needed
        }
        bytes.removeLast(bytes.count - end)
        return Data(bytes)
    }

    /// The ids, or nil when `data` is not a packed list.
    public static func unpack(_ data: Data) -> [Value]? {
        let bytes = [UInt8](data)
        var position = 0
        func word(_ count: Int) -> UInt64? {
            guard bytes.count - position >= count else { return nil }
            var word: UInt64 = 0
            for byte in bytes[position..<(position + count)] { word = word << 8 | UInt64(byte) }
            position += count
            return word
        }
        func payload() -> ArraySlice<UInt8>? {
            guard let length = word(4), bytes.count - position >= Int(length) else { return nil }
            defer { position += Int(length) }
            return bytes[position..<(position + Int(length))]
        }
        var ids: [Value] = []
        while position < bytes.count {
            let tag = bytes[position]
            position += 1
            switch tag {
            case 0:
                ids.append(.null)
            case 1:
                guard let word = word(8) else { return nil }
                ids.append(.integer(Int64(bitPattern: word)))
            case 2:
                guard let word = word(8) else { return nil }
                ids.append(.real(Double(bitPattern: word)))
            case 3:
                guard let text = payload() else { return nil }
                ids.append(.text(String(decoding: text, as: UTF8.self)))
            case 4:
                guard let blob = payload() else { return nil }
                ids.append(.blob(Data(blob)))
            default: return nil
            }
        }
        return ids
    }
}
