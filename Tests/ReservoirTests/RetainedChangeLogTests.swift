import Reservoir
import Testing

@Suite("RetainedChangeLog: the core's change log for backends that want one")
struct RetainedChangeLogTests {
    static func changeSet(_ sequence: UInt64, ids: [Int64]) -> ChangeSet {
        ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "e", inserted: ids.map { RowChange(id: .integer($0), row: Row([("id", .integer($0))])) })])
    }

    @Test(arguments: [1, 2, 3, 10])
    func keepsTheNewestChangeSetsAndAnswersByChangeSetCount(retention: Int) {
        var log = RetainedChangeLog(retention: retention)
        for sequence in UInt64(1)...6 { log.record(Self.changeSet(sequence, ids: [Int64(sequence), Int64(sequence) + 100])) }
        let kept = UInt64(max(1, 7 - retention))...6
        #expect(log.lastSequence == 6)
        #expect(Set(log.entries.map(\.sequence)) == Set(kept), "retention \(retention)")
        #expect(log.entries.count == 2 * kept.count)
        #expect(log.entries(after: 0, limit: 1).map(\.sequence) == [kept.lowerBound, kept.lowerBound])
        #expect(log.entries(after: 5, limit: .max).map(\.id) == [.integer(6), .integer(106)])
        #expect(log.entries(after: 6, limit: .max).isEmpty)
        #expect(log.entries(after: 0, limit: 0).isEmpty)
    }

    @Test func aSavedLogContinuesWhereItStopped() {
        var log = RetainedChangeLog(retention: 5)
        for sequence in UInt64(1)...3 { log.record(Self.changeSet(sequence, ids: [Int64(sequence)])) }
        let reopened = RetainedChangeLog(retention: 5, lastSequence: log.lastSequence, entries: log.entries)
        #expect(reopened == log)
        #expect(RetainedChangeLog(retention: 5, lastSequence: 9).lastSequence == 9, "a sequence saved without entries")
    }
}
