import Foundation
@testable import ReservoirPostgres
import Testing

/// Names other processes must agree on, whatever version of this library they run.
@Suite("PostgreSQL layout: names shared with other processes")
struct LayoutTests {
    @Test("a store's announcement channel is its identity's UUID string, lowercased, without dashes")
    func announcementChannel() {
        var identities = [UUID(uuidString: "00000000-0000-0000-0000-000000000000"), UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"),
                          UUID(uuidString: "0123ABCD-4567-89EF-FEDC-BA9876543210")].compactMap { $0 }
        identities += (0..<200).map { _ in UUID() }
        for identity in identities {
            let spelled = "reservoir:" + identity.uuidString.lowercased().filter { $0 != "-" }
            #expect(Layout.announcementChannel(identity) == spelled)
        }
        #expect(identities.count == 203)
    }
}
