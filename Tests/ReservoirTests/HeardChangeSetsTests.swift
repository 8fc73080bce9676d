@testable import Reservoir
import Testing

/// The chain of remote change sets a following replica keeps for its pulls (`HeardChangeSets`):
/// a pull takes what follows on from its token, stops at a change set that is not complete, and
/// reads the remote whenever its token is not on the chain.
@Suite("Sync: the remote change sets a following replica heard")
struct HeardChangeSetsTests {
    static func changeSet(_ sequence: UInt64, complete: Bool = true) -> ChangeSet {
        let changes = EntityChanges(entity: "notes", inserted: [RowChange(id: .integer(Int64(sequence)), row: Row([("id", .integer(Int64(sequence)))]))])
        return ChangeSet(sequence: sequence, entities: [changes], isComplete: complete, commit: 1000 + sequence)
    }

    static func position(_ sequence: UInt64) -> CommitPosition { changeSet(sequence).position }

    static func hearing(_ sequences: ClosedRange<UInt64>) -> HeardChangeSets {
        var heard = HeardChangeSets(isHearing: true)
        for sequence in sequences { heard.hear(changeSet(sequence)) }
        return heard
    }

    @Test func aTokenOnTheChainTakesWhatFollows() throws {
        var heard = Self.hearing(1...5)
        let first = heard.take(after: Self.position(2))
        let taken = try #require(first)
        #expect(taken.changeSets.map(\.sequence) == [3, 4, 5])
        #expect(taken.reachesEnd)
        // What the token covered is forgotten; the rest stays until a token passes it.
        let second = heard.take(after: Self.position(5))
        let again = try #require(second)
        #expect(again.changeSets.isEmpty && again.reachesEnd)
    }

    @Test func theFirstChangeSetHeardFollowsOnFromNothingKnown() {
        var heard = Self.hearing(4...6)
        // 4 was heard with nothing before it: a token at 3 cannot be taken as its predecessor.
        #expect(heard.take(after: Self.position(3)) == nil)
        let taken = heard.take(after: Self.position(4))
        #expect(taken?.changeSets.map(\.sequence) == [5, 6])
    }

    @Test func anAnchoredChainTakesItsFirstChangeSetAfterTheAnchor() throws {
        var heard = HeardChangeSets(isHearing: true)
        heard.anchor(at: Self.position(3))
        heard.hear(Self.changeSet(4))
        let took = heard.take(after: Self.position(3))
        let taken = try #require(took)
        #expect(taken.changeSets.map(\.sequence) == [4])
        // Something heard before the anchor came: the anchor is not taken (it may not precede it).
        var late = Self.hearing(4...4)
        late.anchor(at: Self.position(3))
        #expect(late.take(after: Self.position(3)) == nil)
        // Nor while not hearing.
        var stopped = HeardChangeSets()
        stopped.anchor(at: Self.position(3))
        #expect(stopped.last == nil)
    }

    @Test func aTokenOffTheChainReads() {
        var heard = Self.hearing(1...3)
        #expect(heard.take(after: Self.position(9)) == nil)
        // Same number, another commit (a lost tail replaced it): not on the chain.
        #expect(heard.take(after: CommitPosition(sequence: 2, commit: 7)) == nil)
    }

    @Test func anIncompleteChangeSetEndsWhatCanBeTaken() throws {
        var heard = Self.hearing(1...2)
        heard.hear(Self.changeSet(3, complete: false))
        heard.hear(Self.changeSet(4))
        let took = heard.take(after: Self.position(1))
        let taken = try #require(took)
        #expect(taken.changeSets.map(\.sequence) == [2])
        #expect(!taken.reachesEnd)
    }

    @Test func nothingIsTakenWhileNotHearing() {
        var heard = Self.hearing(1...3)
        heard.stopHearing()
        heard.hear(Self.changeSet(4))
        #expect(heard.take(after: Self.position(3)) == nil)
        #expect(heard.entries.isEmpty)
    }

    @Test func theOldestGoFirstBeyondTheLimit() {
        var heard = Self.hearing(1...UInt64(HeardChangeSets.limit + 10))
        #expect(heard.entries.count == HeardChangeSets.limit)
        #expect(heard.take(after: Self.position(5)) == nil)
        let taken = heard.take(after: Self.position(10))
        #expect(taken?.changeSets.first?.sequence == 11)
    }
}
