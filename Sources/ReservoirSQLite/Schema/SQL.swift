import Reservoir

/// Quoting for the only things ever spliced into SQL text: identifiers and the
/// entity name literal in trigger bodies. Values are always bound parameters.
enum SQL {
    /// `name` as a quoted identifier: `"name"`, with inner quotes doubled.
    static func identifier(_ name: String) -> String {
        quote(name, with: UInt8(ascii: "\""))
    }

    /// `text` as a string literal: `'text'`, with inner quotes doubled.
    static func literal(_ text: String) -> String {
        quote(text, with: UInt8(ascii: "'"))
    }

    /// Works on UTF-8 bytes: the mark is ASCII, so a byte equal to it is that mark (never part
    /// of a longer character), and a name without one, nearly every name, is copied whole.
    private static func quote(_ text: String, with mark: UInt8) -> String {
        // Every query names its table and columns: a name without the mark, in contiguous
        // UTF-8 (a native string), is written in one go, with no concatenations.
        if let whole = text.utf8.withContiguousStorageIfAvailable({ bytes -> String? in
            guard !bytes.contains(mark) else { return nil }
            return String(unsafeUninitializedCapacity: bytes.count + 2) { buffer in
                buffer[0] = mark
                _ = UnsafeMutableBufferPointer(rebasing: buffer[1...]).initialize(from: bytes)
                buffer[bytes.count + 1] = mark
                return bytes.count + 2
            }
        }) ?? nil {
            return whole
        }
        let quoted = String(UnicodeScalar(mark))
        guard text.utf8.contains(mark) else { return quoted + text + quoted }
        var result = quoted
        result.reserveCapacity(text.utf8.count + 4)
        var rest = Substring(text)
        while let found = rest.utf8.firstIndex(of: mark) {
            result += rest[..<found] + quoted + quoted
            rest = rest[rest.utf8.index(after: found)...]
        }
        result += rest + quoted
        return result
    }

    /// SQLite compares identifiers ignoring ASCII case; this is the key it compares by.
    static func fold(_ name: String) -> String {
        String(decoding: name.utf8.map { (0x41...0x5a).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// Names reserved for the backend's own tables, triggers and indexes.
    static let reservedPrefix = "_reservoir_"

    /// Checks that `name` can name an entity table or a column.
    static func checkName(_ name: String, kind: String, entity: String, path: String) throws {
        if name.isEmpty || name.utf8.contains(0) {
            throw ReservoirError(.invalidSchema, "\(sqliteStore(path)): \(kind) name \"\(name)\" of entity \"\(entity)\" is empty or contains a NUL character, which SQLite cannot store as a name")
        }
        let folded = fold(name)
        if kind == "entity" && (folded.hasPrefix(reservedPrefix) || folded.hasPrefix("sqlite_")) {
            throw ReservoirError(.invalidSchema, "\(sqliteStore(path)): entity name \"\(name)\" is reserved (names starting with \(reservedPrefix) or sqlite_ are the backend's and SQLite's own)")
        }
    }
}
