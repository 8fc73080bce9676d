import Foundation
import OpenCombineShim
import PropertyBased
import Reservoir
import ReservoirConformance
import Testing

private struct Card: Storable {
    var id: Int
    var rank: Int
    var suit: String?
    static let schema = Schema<Card>("cards", fields: [.field(\.rank, indexed: true), .field(\.suit)])
}

/// One step of a random history: a transaction of upserts and deletes, possibly rolled back.
private struct Step: Sendable, CustomStringConvertible {
    var upserts: [(id: Int, rank: Int, suit: String?)]
    var deletes: [Int]
    var rollback: Bool
    /// Whether the slow subscriber asks for one more value after this step.
    var demand: Bool
    var description: String { "upsert \(upserts.map { "\($0.id):\($0.rank)\($0.suit ?? "-")" }) delete \(deletes)\(rollback ? " rollback" : "")\(demand ? " +demand" : "")" }
}

private func makeUpsertStep(_ ids: [Int], _ ranks: [Int], _ rollback: Bool, _ demand: Bool) -> Step {
    let upserts = ids.enumerated().map { k, id -> (id: Int, rank: Int, suit: String?) in
        let rank = ranks[k % ranks.count]
        return (id: id, rank: rank, suit: rank % 3 == 0 ? nil : (id % 2 == 0 ? "h" : "s"))
    }
    return Step(upserts: upserts, deletes: [], rollback: rollback && ids.count > 1, demand: demand)
}

private let upsertSteps = zip(Gen.int(in: 0...15).array(of: 0...3), Gen.int(in: 0...9).array(of: 3), Gen.bool, Gen.bool)
    .map(makeUpsertStep)
private let deleteSteps = zip(Gen.int(in: 0...15).array(of: 1...3), Gen.bool)
    .map { ids, demand in Step(upserts: [], deletes: ids, rollback: false, demand: demand) }
private let stepGenerator = Gen<Step>.oneOf(upsertSteps.eraseToAnySequence(), deleteSteps.eraseToAnySequence())

@Suite("Observation")
struct ObservationTests {
    @Test("applying every difference to [] gives a fresh fetch, for random histories, with and without limited demand",
          arguments: [
              FetchRequest<Card>(), FetchRequest<Card>(where: \.suit != nil, sortBy: [.descending(\.rank)]),
              FetchRequest<Card>(sortBy: [.ascending(\.rank)], limit: 4), FetchRequest<Card>(sortBy: [.ascending(\.suit)], limit: 3, offset: 2),
          ])
    fileprivate func invariant(_ request: FetchRequest<Card>) async {
        await propertyCheck(count: 60, input: stepGenerator.array(of: 1...25)) { steps in
            guard let store = try? Store.open("memory:", registry: BackendRegistry()) else { return #expect(Bool(false)) }
            let eager = LiveRecorder<CollectionDifference<Card>>(initialDemand: .unlimited)
            let slow = LiveRecorder<CollectionDifference<Card>>(initialDemand: .max(1))
            store.differencesPublisher(for: request).subscribe(eager)
            store.differencesPublisher(for: request).subscribe(slow)
            for step in steps {
                _ = try? store.write { tx in
                    for upsert in step.upserts { try tx.upsert(Card(id: upsert.id, rank: upsert.rank, suit: upsert.suit)) }
                    for id in step.deletes { try tx.delete(Card.self, id: id) }
                    if step.rollback { throw CancellationError() }
                }
                if step.demand { slow.request(.max(1)) }
                let expected = (try? store.fetch(request)) ?? []
                #expect(eager.values.reduce([Card]()) { $0.applying($1) ?? [] } == expected, "unlimited demand after \(step)")
                #expect(eager.values.dropFirst().allSatisfy { !$0.isEmpty }, "no empty difference after the first")
                if step.demand {
                    #expect(slow.values.reduce([Card]()) { $0.applying($1) ?? [] } == expected, "limited demand after \(step)")
                }
            }
            eager.cancel()
            slow.cancel()
        }
    }

    @Test("applyingChanges keeps a parallel collection in step, transforming only insertions")
    func applyingChanges() throws {
        let store = try Store.open("memory:", registry: BackendRegistry())
        let transformed = LiveRecorder<[String]>(initialDemand: .unlimited)
        let calls = Locked(0)
        store.differencesPublisher(for: FetchRequest<Card>(sortBy: [.ascending(\.rank)]))
            .applyingChanges([String]()) { card in calls.withLock { $0 += 1 }; return "card \(card.id) rank \(card.rank)" }
            .subscribe(transformed)
        try store.write { tx in for i in 0..<5 { try tx.insert(Card(id: i, rank: i * 10, suit: nil)) } }
        try store.write { tx in try tx.update(Card(id: 2, rank: 99, suit: "h")) }
        try store.write { tx in try tx.delete(Card.self, id: 0) }
        #expect(transformed.values.last == ["card 1 rank 10", "card 3 rank 30", "card 4 rank 40", "card 2 rank 99"])
        let transformCalls = calls.withLock { $0 }
        #expect(transformCalls == 6, "5 insertions and the updated card's new version")
        transformed.cancel()
    }

    @Test("ResultsChange marks a record that changed place as moved and one that stayed as updated")
    func movesAndUpdates() throws {
        let store = try Store.open("memory:", registry: BackendRegistry())
        let recorder = LiveRecorder<ResultsChange<Card>>(initialDemand: .unlimited)
        store.resultsChangesPublisher(for: FetchRequest<Card>(sortBy: [.ascending(\.rank)])).subscribe(recorder)
        try store.write { tx in for i in 0..<5 { try tx.insert(Card(id: i, rank: i * 10, suit: nil)) } }
        try store.write { tx in
            try tx.update(Card(id: 0, rank: 45, suit: nil))     // from first to last: moved
            try tx.update(Card(id: 2, rank: 21, suit: "s"))     // stays between 1 and 3: updated
            try tx.delete(Card.self, id: 3)
            try tx.insert(Card(id: 9, rank: 5, suit: nil))
        }
        let change = try #require(recorder.values.last)
        #expect(change.results.map(\.id) == [9, 1, 2, 4, 0])
        #expect(change.deleted == [3])
        #expect(change.inserted == [0])
        #expect(change.moved == [ResultsChange<Card>.Positions(old: 0, new: 4)])
        #expect(change.updated == [ResultsChange<Card>.Positions(old: 2, new: 2)])
        let previous = recorder.values.dropLast().last?.results ?? []
        #expect(try change.applied(to: previous) { $0 } == change.results)
        // #37 item 6: a list the change does not fit is a .misuse naming both lengths, not a trap.
        for misfit in [[], Array(previous.dropLast()), previous + previous] {
            #expect {
                _ = try change.applied(to: misfit) { $0 }
            } throws: { error in
                (error as? ReservoirError)?.code == .misuse && "\(error)".contains("the list has \(misfit.count) items")
            }
        }
        recorder.cancel()
    }
}
