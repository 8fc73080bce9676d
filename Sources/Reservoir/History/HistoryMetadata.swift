import Foundation

/// One consumer's hold as a store keeps it (``Store/retainHistory(for:from:)``).
struct HistoryHoldRecord: Codable, Hashable, Sendable {
    var consumer: String
    var sequence: UInt64
    var commit: UInt64
    /// When it was made or last renewed, in seconds since 1970.
    var renewed: Double

    func isLive(at now: Date, holdAge: Duration) -> Bool {
        now.timeIntervalSince1970 - renewed < HistoryRetention.seconds(holdAge)
    }

    /// The store's holds, read from its metadata (none when it has none).
    static func read(_ reader: any ReadTransaction) throws -> [HistoryHoldRecord] {
        try reader.decodedMetadata([HistoryHoldRecord].self, HistoryMetadataKey.holds, "the store's history holds") ?? []
    }

    static func write(_ holds: [HistoryHoldRecord], _ writer: any WriteTransaction) throws {
        try writer.setMetadata(HistoryMetadataKey.holds, to: holds.isEmpty ? nil : try encodedMetadata(holds))
    }
}

/// The coarse clock of ``HistoryRetention``: which sequence was newest at which moments.
struct HistoryClock: Codable, Hashable, Sendable {
    struct Mark: Codable, Hashable, Sendable {
        var sequence: UInt64
        var time: Double
    }

    var marks: [Mark] = []

    /// What one ``Store`` remembers between its commits: the time of the newest mark it saw,
    /// and its previous commit.
    struct Local: Sendable {
        var newest: Double?
        var previous: Mark?
    }

    /// The newest marked sequence committed at or before `moment` (0: none known to be).
    func newestSequence(committedBefore moment: Date) -> UInt64 {
        let limit = moment.timeIntervalSince1970
        return marks.last { $0.time <= limit }?.sequence ?? 0
    }

    static func read(_ reader: any ReadTransaction) throws -> HistoryClock {
        try reader.decodedMetadata(HistoryClock.self, HistoryMetadataKey.clock, "the store's history clock") ?? HistoryClock()
    }

    func write(_ writer: any WriteTransaction) throws {
        try writer.setMetadata(HistoryMetadataKey.clock, to: marks.isEmpty ? nil : try encodedMetadata(self))
    }
}

/// The metadata keys (``ReadTransaction/metadata(_:)``) this library uses.
enum HistoryMetadataKey {
    static let holds = "history.holds"
    static let clock = "history.clock"
}

extension ReadTransaction {
    /// The JSON value the library keeps under metadata `key`, or nil; `.corrupt` naming `what`
    /// and the key when the bytes are not one.
    func decodedMetadata<T: Decodable & Sendable>(_ type: T.Type, _ key: String, _ what: String) throws -> T? {
        guard let data = try metadata(key) else { return nil }
        let cached = DecodedMetadata.Key(type: ObjectIdentifier(type), bytes: data)
        if data.count <= DecodedMetadata.largest, let value = DecodedMetadata.values.withLock({ $0.values[cached] }) as? T { return value }
        let value = try Self.decoded(type, data, key, what)
        DecodedMetadata.remember(value, as: cached)
        return value
    }

    /// ``decodedMetadata(_:_:_:)`` for a value one owner writes and reads again and again (a
    /// replica's state, every round): remembered by `memo`, the owner's own, instead of in the
    /// cache every store of the process shares (whose lock 50 replicas contended for).
    func decodedMetadata<T: Decodable & Sendable>(_ type: T.Type, _ key: String, _ what: String, memo: MetadataMemo<T>) throws -> T? {
        guard let data = try metadata(key) else { return nil }
        if let value = memo.value(for: data) { return value }
        let value = try Self.decoded(type, data, key, what)
        memo.remember(value, as: data)
        return value
    }

    private static func decoded<T: Decodable>(_ type: T.Type, _ data: Data, _ key: String, _ what: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw ReservoirError(.corrupt, "\(what) (metadata \"\(key)\") cannot be read: \(error)")
        }
    }
}

/// The last metadata value one owner wrote or read, with its exact bytes: a read of the same
/// bytes is that value, without decoding.
final class MetadataMemo<T: Sendable>: Sendable {
    private let last = Locked<(bytes: Data, value: T)?>(nil)

    func value(for bytes: Data) -> T? {
        last.withLock { last in last.flatMap { $0.bytes == bytes ? $0.value : nil } }
    }

    func remember(_ value: T, as bytes: Data) {
        last.withLock { $0 = (bytes, value) }
    }
}

/// The JSON bytes the library keeps `value` under in metadata, remembered as decoded: the
/// next read of them (a following replica's next round) decodes nothing.
func encodedMetadata<T: Encodable & Sendable>(_ value: T) throws -> Data {
    let data = try JSONEncoder().encode(value)
    DecodedMetadata.remember(value, as: DecodedMetadata.Key(type: ObjectIdentifier(T.self), bytes: data))
    return data
}

/// JSON text, written by hand: an object's members, strings escaped as JSON requires.
struct JSONObjectWriter {
    private(set) var bytes: [UInt8]

    init() {
        bytes = []
        bytes.reserveCapacity(256)
        bytes.append(UInt8(ascii: "{"))
    }

    mutating func member(_ name: String, _ value: String?) {
        guard let value else { return }
        open(name)
        string(value)
    }

    /// `value` as `UUID.uuidString` spells it (upper case), without making that string.
    mutating func member(_ name: String, _ value: UUID) {
        open(name)
        bytes.append(UInt8(ascii: "\""))
        appendUUIDText(value, to: &bytes, digits: uppercaseHexDigits)
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func open(_ name: String) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Tokens and shape texts need no escapes: copied whole.
            guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                case 0..<0x20:
                    bytes.append(contentsOf: "\\u00".utf8)
                    bytes.append(lowercaseHexDigits[Int(byte >> 4)])
                    bytes.append(lowercaseHexDigits[Int(byte & 0xF)])
                default:
                    bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    var data: Data {
        var closed = bytes
        closed.append(UInt8(ascii: "}"))
        return Data(closed)
    }
}

let lowercaseHexDigits: [UInt8] = Array("0123456789abcdef".utf8)
let uppercaseHexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

/// Appends `uuid` in its usual text form (8-4-4-4-12 hex digits) in `digits`' case.
func appendUUIDText(_ uuid: UUID, to bytes: inout [UInt8], digits: [UInt8]) {
    withUnsafeBytes(of: uuid.uuid) { uuid in
        for (index, byte) in uuid.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0xF)])
        }
    }
}

/// Small metadata values already decoded, by their exact bytes (values, not references, so a
/// hit is the value those bytes decode to): a following replica reads the same few small JSON
/// values several times a round, and decoding them was a tenth of its time.
private enum DecodedMetadata {
    struct Key: Hashable {
        let type: ObjectIdentifier
        let bytes: Data
    }

    /// The values, and their keys oldest first.
    static let values = Locked<(values: [Key: any Sendable], order: [Key])>(([:], []))
    /// Values kept at most (the oldest go first) and the largest kept, in bytes.
    static let limit = 1024
    static let largest = 4096

    static func remember(_ value: any Sendable, as key: Key) {
        guard key.bytes.count <= largest else { return }
        values.withLock { cache in
            if cache.values.updateValue(value, forKey: key) == nil { cache.order.append(key) }
            if cache.order.count > limit {
                let dropped = cache.order.count - limit / 2
                for old in cache.order.prefix(dropped) { cache.values[old] = nil }
                cache.order.removeFirst(dropped)
            }
        }
    }
}
