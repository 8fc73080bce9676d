import PropertyBased
@testable import Reservoir
import Testing

@Suite("ChangeTracker")
struct ChangeTrackerTests {
    private static let entity = EntityDescription(name: "things", fields: ["id", "v"], integerIDs: true)

    private static func number(_ value: Value) -> Int {
        if case let .integer(integer) = value { return Int(integer) }
        return -1
    }

    private static func row(_ id: Int, _ version: Int) -> Row {
        Row(columns: ["id", "v"], values: [.integer(Int64(id)), .integer(Int64(version))])
    }

    /// Drives the tracker the way `Transaction` does, over a model of the stored rows, and
    /// checks the change set against the difference between the first and last state:
    /// across both the scan and the id-index lookups (more touches than the scan limit).
    @Test("nets random inserts, updates and deletes into the difference between the first and last state")
    func netsToTheStateDifference() async {
        let steps = zip(Gen.int(in: 0...3), Gen.int(in: 0...29), Gen.int(in: 0...2)).array(of: 0...120)
        await propertyCheck(count: 200, input: Gen.int(in: 0...15), steps) { initialCount, operations in
            let initial = Dictionary(uniqueKeysWithValues: (0..<initialCount).map { ($0, Self.row($0, 0)) })
            var current = initial
            var tracker = ChangeTracker()
            for (kind, id, version) in operations {
                let key = Value.integer(Int64(id))
                let row = Self.row(id, version)
                switch (kind, current[id]) {
                case (0, nil):
                    // An insert the backend accepted.
                    tracker.noteInserted(Self.entity, id: key, row: row)
                    current[id] = row
                case (1, let previous?) where previous != row, (2, let previous?) where previous != row:
                    tracker.note(Self.entity, id: key, before: previous, after: row)
                    current[id] = row
                case (3, let previous?):
                    tracker.note(Self.entity, id: key, before: previous, after: nil)
                    current[id] = nil
                default:
                    break  // refused or identical: Transaction notes nothing
                }
            }
            var inserted: [Int: Row] = [:]
            var updated: [Int: Row] = [:]
            var deleted: [Int: Row] = [:]
            for id in Set(initial.keys).union(current.keys) {
                switch (initial[id], current[id]) {
                case (nil, let after?): inserted[id] = after
                case (let before?, nil): deleted[id] = before
                case let (before?, after?) where before != after: updated[id] = after
                default: break
                }
            }
            let changeSet = tracker.changeSet(sequence: 7)
            if inserted.isEmpty && updated.isEmpty && deleted.isEmpty {
                #expect(changeSet == nil)
                return
            }
            #expect(changeSet?.sequence == 7)
            #expect(changeSet?.entities.count == 1)
            guard let changes = changeSet?.entities.first else { return }
            func byID(_ list: [RowChange]) -> [Int: Row] {
                Dictionary(list.map { (Self.number($0.id), $0.row) }, uniquingKeysWith: { first, _ in first })
            }
            #expect(changes.inserted.count == inserted.count)
            #expect(byID(changes.inserted) == inserted)
            #expect(changes.updated.count == updated.count)
            #expect(byID(changes.updated) == updated)
            #expect(Set(changes.deleted.map { Self.number($0) }) == Set(deleted.keys))
            #expect(changes.deleted.count == deleted.count)
            #expect(byID(changes.deletedRows) == deleted)
        }
    }
}
