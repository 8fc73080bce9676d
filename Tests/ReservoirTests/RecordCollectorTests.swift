import Foundation
@testable import Reservoir
import Testing

/// How a fetch collects its records (`RecordCollector`): from a backend that does not announce
/// their number (SQLite's) in the calling thread's block, then moved into an array of their
/// number; from one that announces it, in an array of that capacity. Order, values, errors
/// part-way and fetches inside fetches are the same either way. Serialized: `Token.live` counts
/// the records of every test in the suite.
@Suite("RecordCollector", .serialized)
struct RecordCollectorTests {
    /// The block's capacity in `Tracked` records.
    static let blockRecords = RecordScratch.byteCount / MemoryLayout<Tracked>.stride

    @Test(arguments: [0, 1, 2, 100, blockRecords - 1, blockRecords, blockRecords + 1, 2 * blockRecords + 3, 1000])
    func unannouncedRecordsArriveInOrder(count: Int) throws {
        let records = try Self.records(count)
        #expect(records.map(\.id) == Array(0..<count))
        #expect(records.allSatisfy { $0.token.id == $0.id })
    }

    @Test(arguments: [0, 1, 100, blockRecords + 1, 1000])
    func announcedRecordsArriveInOrder(count: Int) throws {
        let records = try Self.records(count, announced: true)
        #expect(records.map(\.id) == Array(0..<count))
        #expect(records.capacity >= count)
    }

    /// Grown by doubling from 16, an array of 100 records had room for 128.
    @Test func anUnannouncedResultHasNoRoomToSpare() throws {
        let records = try Self.records(100)
        #expect(records.count == 100)
        #expect(records.capacity < 128, "capacity \(records.capacity) for 100 records")
    }

    /// Past the block, the array grows as one grown by doubling from 16 would: 1,000 records
    /// in room for 1,024, not for twice the block's records doubled.
    @Test func aResultPastTheBlockHasTheRoomDoublingGives() throws {
        #expect(Self.blockRecords & (Self.blockRecords - 1) != 0, "a block of \(Self.blockRecords) records, a power of two, would not tell")
        let records = try Self.records(1000)
        #expect(records.count == 1000)
        #expect(records.capacity >= 1000 && records.capacity < 1100, "capacity \(records.capacity) for 1,000 records")
    }

    /// A record that fails to decode ends the fetch with its error, and every record decoded
    /// before it is released: in the block, and after the block filled up.
    @Test(arguments: [0, 1, 50, blockRecords, blockRecords + 7])
    func anErrorPartWayReleasesWhatWasCollected(failingAt failing: Int) {
        let before = Token.live.withLock { $0 }
        #expect(throws: ReservoirError.self) {
            _ = try Self.records(failing + 10, failingAt: failing)
        }
        #expect(Token.live.withLock { $0 } == before)
        // The thread's block is whole again: the next fetch on it collects as usual.
        #expect((try? Self.records(100).map(\.id)) == Array(0..<100))
    }

    /// A fetch made while another is collecting on the same thread (a record's decoding may
    /// fetch) collects apart from it.
    @Test func aFetchInsideAFetchCollectsApart() throws {
        var inner: [[Int]] = []
        let outer = try Self.records(300) { index in
            if index % 60 == 0 { inner.append(try Self.records(index + 5).map(\.id)) }
        }
        #expect(outer.map(\.id) == Array(0..<300))
        #expect(inner == [0, 60, 120, 180, 240].map { Array(0..<($0 + 5)) })
    }

    @Test func threadsCollectApart() {
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<50 {
                let count = (thread * 37 + round * 11) % 500
                if (try? Self.records(count).map(\.id)) != Array(0..<count) { failures.withLock { $0 += 1 } }
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }

    /// A type too large to put several in the block goes straight to an array.
    @Test func aLargeTypeIsCollectedInAnArray() {
        var collector = RecordCollector<Large>()
        defer { collector.discard() }
        #expect(collector.capacity == 0)
        for index in 0..<40 { collector.append(Large(index)) }
        #expect(collector.finish().map(\.first) == Array(0..<40))
    }

    // MARK: - Fixtures

    /// `RecordCoding.records` over `count` rows of `Tracked` that a backend hands over without
    /// announcing them (or announcing them first), the row at `failing` failing to decode, and
    /// `before(index)` called before each row.
    static func records(_ count: Int, announced: Bool = false, failingAt failing: Int? = nil,
                        before: (Int) throws -> Void = { _ in }) throws -> [Tracked] {
        func rows(_ expecting: (Int) -> Void, _ each: (Row) throws -> Void) throws {
            if announced { expecting(count) }
            for index in 0..<count {
                try before(index)
                try each(Row(columns: ["id", "fails"], values: [.integer(Int64(index)), .integer(index == failing ? 1 : 0)]))
            }
        }
        return try RecordCoding.records(Tracked.self, fetch: { try rows($0, $1) }, scan: { expecting, each, _ in try rows(expecting, each) })
    }
}

/// A record holding an object, so that a record not released shows in `Token.live`; 48 bytes,
/// as the benchmark table's record, so a block holds a number of them that is not a power of two.
struct Tracked: Storable {
    var id: Int
    var token: Token
    var padding: (Int, Int, Int, Int) = (0, 0, 0, 0)

    static let schema = Schema<Tracked>("tracked", fields: [.field(\.id)])

    init(id: Int) {
        self.id = id
        token = Token(id)
    }

    init(row: borrowing Row) throws {
        guard case .integer(let id)? = row["id"] else { throw ReservoirError(.typeMismatch, "no id") }
        if case .integer(1)? = row["fails"] { throw ReservoirError(.typeMismatch, "row \(id) fails, as the test asks") }
        self.init(id: Int(id))
    }

    func makeRow() throws -> Row { Row(columns: ["id"], values: [.integer(Int64(id))]) }

    init(from decoder: any Decoder) throws { throw ReservoirError(.typeMismatch, "not decoded") }
    func encode(to encoder: any Encoder) throws {}

    static func == (lhs: Tracked, rhs: Tracked) -> Bool { lhs.id == rhs.id }
}

/// Counts the instances alive.
final class Token: Sendable {
    static let live = Locked(0)
    let id: Int

    init(_ id: Int) {
        self.id = id
        Self.live.withLock { $0 += 1 }
    }

    deinit { Self.live.withLock { $0 -= 1 } }
}

/// A record far larger than a block's quarter: 4,104 bytes.
struct Large {
    typealias Eight<T> = (T, T, T, T, T, T, T, T)
    var first: Int
    var rest: Eight<Eight<Eight<Int64>>>

    init(_ first: Int) {
        self.first = first
        let eight: Eight<Int64> = (0, 0, 0, 0, 0, 0, 0, 0)
        let sixtyFour = (eight, eight, eight, eight, eight, eight, eight, eight)
        rest = (sixtyFour, sixtyFour, sixtyFour, sixtyFour, sixtyFour, sixtyFour, sixtyFour, sixtyFour)
    }
}
