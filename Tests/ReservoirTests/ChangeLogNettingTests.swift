import Testing
@testable import Reservoir

@Suite struct ChangeLogNettingTests {
    /// Netting by first and last event, and `existed` as "there before, unchanged".
    @Test func nettingKeepsEachRecordsNetChange() {
        let cases: [([ChangeLogNetting.Event], ChangeType?)] = [
            ([.inserted], .inserted), ([.updated], .updated), ([.deleted], .deleted),
            ([.inserted, .deleted], nil), ([.inserted, .updated], .inserted), ([.updated, .deleted], .deleted),
            ([.deleted, .inserted], .updated), ([.existed], nil), ([.existed, .deleted, .inserted], .updated),
            ([.inserted, .deleted, .inserted], .inserted),
        ]
        for (events, expected) in cases {
            var netting = ChangeLogNetting()
            for event in events { netting.add(entity: "a", id: .integer(1), event) }
            netting.add(entity: "b", id: .integer(1), .deleted)
            var entries: [ChangeLogEntry] = []
            netting.flush(sequence: 9, into: &entries)
            let first = expected.map { [ChangeLogEntry(sequence: 9, entity: "a", id: .integer(1), kind: $0)] } ?? []
            #expect(entries == first + [ChangeLogEntry(sequence: 9, entity: "b", id: .integer(1), kind: .deleted)], "\(events)")
            #expect(netting.isEmpty)
        }
    }
}
