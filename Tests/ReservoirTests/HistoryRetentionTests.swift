import Foundation
import Testing
@testable import Reservoir

/// The retention rule (``HistoryRetention``) and its options, decided in one place for every backend.
@Suite struct HistoryRetentionTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    func hold(_ sequence: UInt64, renewedSecondsAgo age: Double) -> HistoryHoldRecord {
        HistoryHoldRecord(consumer: "c\(sequence)", sequence: sequence, commit: 1, renewed: now.timeIntervalSince1970 - age)
    }

    @Test func theOptionsReadAsDurations() throws {
        let parsed = try StoreConfiguration("x:y?retention=50&retentionage=12h&holdage=90").historyRetention(defaultCount: 10)
        #expect(parsed == HistoryRetention(count: 50, age: .seconds(43_200), holdAge: .seconds(90)))
        #expect(try StoreConfiguration("x:y").historyRetention(defaultCount: 10) == HistoryRetention(count: 10))
        #expect(try StoreConfiguration("x:y?retentionage=7D").historyRetention(defaultCount: 10).age == .seconds(604_800))
        for bad in ["0", "-3d", "soon", "7w", "", "99999999999999999d"] {
            let error = try #require(throws: ReservoirError.self) {
                try StoreConfiguration("x:y?retentionage=\(bad)").historyRetention(defaultCount: 10)
            }
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("retentionage=\(bad)") && error.message.contains("(7d, 12h, 90s)"), "\(error.message)")
        }
        #expect(HistoryRetention(count: 5, age: .seconds(86_400)).description
                == "the newest 5 change sets, those younger than 1d, consumers' holds renewed within 7d")
    }

    @Test func aChangeSetGoesOnlyWhenNoRuleKeepsIt() {
        let clock = HistoryClock(marks: [.init(sequence: 10, time: now.timeIntervalSince1970 - 7_200),
                                         .init(sequence: 40, time: now.timeIntervalSince1970 - 1_800)])
        // Count alone: the newest 5 of 100.
        #expect(HistoryRetention(count: 5).droppable(newest: 100, now: now, clock: clock, holds: []) == 95)
        // Everything, when neither count nor age is given.
        #expect(HistoryRetention(count: 0).droppable(newest: 100, now: now, clock: clock, holds: []) == 0)
        // Age: what was committed by an hour ago (sequence 10) may go, not what came after.
        #expect(HistoryRetention(count: 5, age: .seconds(3_600)).droppable(newest: 100, now: now, clock: clock, holds: []) == 10)
        #expect(HistoryRetention(count: 0, age: .seconds(600)).droppable(newest: 100, now: now, clock: clock, holds: []) == 40)
        // A live hold keeps its token's own change set and all after; an expired one keeps nothing.
        #expect(HistoryRetention(count: 5).droppable(newest: 100, now: now, clock: clock, holds: [hold(30, renewedSecondsAgo: 60)]) == 29)
        #expect(HistoryRetention(count: 5, holdAge: .seconds(30)).droppable(newest: 100, now: now, clock: clock,
                                                                            holds: [hold(30, renewedSecondsAgo: 60)]) == 95)
        // The newest change set always stays.
        #expect(HistoryRetention(count: 0, age: .seconds(1)).droppable(newest: 40, now: now, clock: clock, holds: []) == 39)
    }
}
