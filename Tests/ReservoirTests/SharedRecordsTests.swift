import Foundation
import OpenCombineShim
@testable import Reservoir
import Testing

private struct Note: Storable, Equatable {
    var id: Int
    var rank: Int
    var text: String
    static let schema = Schema<Note>("notes", fields: [.field(\.rank), .field(\.text)])
}

private func noteRow(_ id: Int, rank: Int, text: String = "t") -> Row {
    Row(columns: ["id", "rank", "text"], values: [.integer(Int64(id)), .integer(Int64(rank)), .text(text)])
}

@Suite("SharedRecords")
struct SharedRecordsTests {
    @Test("one entry per record version: the same row gives the held entry, a new row a new one")
    func entryPerVersion() throws {
        let table = SharedRecords().table(for: Note.self, entity: "notes")
        let first = try table.acquireEntries([(id: .integer(1), row: noteRow(1, rank: 1))], holder: 1)[0]
        #expect(try table.entry(id: .integer(1), row: noteRow(1, rank: 1)) === first)
        let second = try table.entry(id: .integer(1), row: noteRow(1, rank: 2))
        #expect(second !== first)
        #expect(second.record.rank == 2 && first.record.rank == 1)
        // Once a fetch keeps the new version, it is the one handed out; the old one is not again.
        table.acquire([second], holder: 2)
        #expect(try table.entry(id: .integer(1), row: noteRow(1, rank: 2)) === second)
        #expect(try table.entry(id: .integer(1), row: noteRow(1, rank: 1)) !== first)
        // Each holder still finds its own version, and routing finds both holders.
        #expect(table.heldEntries([.integer(1)], holder: 1).first === first)
        #expect(table.heldEntries([.integer(1)], holder: 2).first === second)
        #expect(table.heldEntries([.integer(1)], holder: 3).isEmpty)
        var tokens: Set<UInt64> = []
        table.formHolders(of: [.integer(1), .integer(2)], into: &tokens)
        #expect(tokens == [1, 2])
        #expect(table.displacedCount == 1)
        // Letting go of the replaced version leaves the new one held.
        table.release([first], holder: 1)
        #expect(table.heldCount == 1 && table.displacedCount == 0)
        #expect(table.heldEntries([.integer(1)], holder: 1).isEmpty)
        table.release([second], holder: 2)
        #expect(table.heldCount == 0)
    }

    @Test("a record is forgotten when its last holder lets go, and a bad row is an error")
    func holdersAndErrors() throws {
        let table = SharedRecords().table(for: Note.self, entity: "notes")
        let rows = (0..<100).map { (id: Value.integer(Int64($0)), row: noteRow($0, rank: $0)) }
        let once = try table.acquireEntries(rows, holder: 1)
        let twice = try table.acquireEntries(rows, holder: 2)
        #expect(zip(once, twice).allSatisfy { $0 === $1 })
        // A holder acquiring twice (a re-fetch keeping records) holds until it releases twice.
        _ = try table.acquireEntries(rows, holder: 1)
        table.release(once, holder: 1)
        table.release(twice, holder: 2)
        #expect(table.heldCount == 100)
        #expect(table.heldEntries([.integer(5)], holder: 1).first === once[5])
        table.release(once, holder: 1)
        #expect(table.heldCount == 0)
        #expect(throws: ReservoirError.self) {
            try table.entry(id: .integer(1), row: Row(columns: ["id", "rank", "text"], values: [.integer(1), .text("not a number"), .text("t")]))
        }
        let bad = Row(columns: ["id", "rank", "text"], values: [.integer(101), .text("not a number"), .text("t")])
        #expect(throws: ReservoirError.self) { try table.acquireEntries(rows + [(id: .integer(101), row: bad)], holder: 3) }
        #expect(table.heldCount == 0)
    }

    @Test("distinct live fetches over the same records hold one decoded copy per record")
    func liveFetchesShare() throws {
        let store = try Store.open("memory:")
        try store.write { tx in for id in 0..<50 { try tx.insert(Note(id: id, rank: id, text: "n\(id)")) } }
        var cancellables: [AnyCancellable] = []
        let received = Received()
        let requests = [
            FetchRequest<Note>(where: \.rank >= 0, sortBy: [.ascending(\.rank)]),
            FetchRequest<Note>(where: \.rank >= 10, sortBy: [.descending(\.text)]),
            FetchRequest<Note>(sortBy: [.descending(\.rank)]),
        ]
        for (index, request) in requests.enumerated() {
            cancellables.append(store.differencesPublisher(for: request).sink(receiveCompletion: { _ in }, receiveValue: { received.apply($0, to: index) }))
        }
        let table = store.hub.records.table(for: Note.self, entity: "notes")
        #expect(table.heldCount == 50)
        try store.write { tx in try tx.update(Note(id: 20, rank: 20, text: "changed")) }
        #expect(table.heldCount == 50)
        // Every fetch moved on to the new version of record 20: no old one is kept.
        #expect(table.displacedCount == 0)
        for (index, request) in requests.enumerated() {
            #expect(received.lists[index] == (try store.fetch(request)), "request \(index)")
        }
        cancellables.forEach { $0.cancel() }
        #expect(table.heldCount == 0)
    }
}

/// What each subscription has applied so far.
private final class Received: @unchecked Sendable {
    // @unchecked: deliveries in these tests happen on the committing thread, one at a time.
    var lists: [Int: [Note]] = [:]

    func apply(_ difference: CollectionDifference<Note>, to index: Int) {
        lists[index] = (lists[index] ?? []).applying(difference) ?? []
    }
}
