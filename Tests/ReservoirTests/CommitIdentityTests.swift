import Foundation
import Reservoir
import Testing

/// Commit identities: never 0, their lowest bit saying who committed, and no two the same among
/// those one process makes, from several threads at once (a lost commit's reused number must
/// come back under another identity, or the rewind goes unseen).
@Suite struct CommitIdentityTests {
    @Test func identitiesAreDistinctNonZeroAndMarkTheirOrigin() async {
        let perTask = 25_000
        let made = await withTaskGroup(of: [UInt64].self) { group in
            for task in 0..<4 {
                group.addTask {
                    (0..<perTask).map { _ in
                        CommitPosition.newIdentity(origin: task % 2 == 0 ? .library : .otherClient)
                    }
                }
            }
            var all: [[UInt64]] = []
            for await identities in group { all.append(identities) }
            return all
        }
        var seen = Set<UInt64>()
        for identities in made {
            for identity in identities {
                #expect(identity != 0)
                #expect(seen.insert(identity >> 1).inserted, "identity \(identity) made twice")
            }
        }
        #expect(seen.count == 4 * perTask)
        let library = made.filter { $0.first.map { $0 & 1 == 1 } ?? false }
        #expect(library.count == 2)
        #expect(made.allSatisfy { identities in identities.allSatisfy { $0 & 1 == identities[0] & 1 } })
        #expect(CommitPosition(sequence: 1, commit: CommitPosition.newIdentity()).origin == .library)
        #expect(CommitPosition(sequence: 1, commit: CommitPosition.newIdentity(origin: .otherClient)).origin == .otherClient)
    }
}
