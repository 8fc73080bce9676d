import Foundation
import Reservoir
import Testing

/// The option parsing every backend shares: one spelling, one meaning, one kind of error.
@Suite struct ConfigurationOptionTests {
    @Test func durabilityAcceptsWhatTheBackendOffers() throws {
        #expect(try StoreConfiguration("x:y?durability=FULL").durability(default: .normal) == .full)
        #expect(try StoreConfiguration("x:y").durability(default: .normal) == .normal)
        #expect(try StoreConfiguration("x:y?durability=none").durability(accepting: [.none, .normal, .full], default: .normal) == Durability.none)
        let error = try #require(throws: ReservoirError.self) {
            try StoreConfiguration("x:y?durability=none").durability(default: .normal)
        }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("durability=none") && error.message.contains("expected normal or full"), "\(error.message)")
    }

    @Test func retentionIsAChangeSetCountAndZeroKeepsAll() throws {
        #expect(try StoreConfiguration("x:y?retention=0").retention(default: 10) == 0)
        #expect(try StoreConfiguration("x:y?retention=25").retention(default: 10) == 25)
        #expect(try StoreConfiguration("x:y").retention(default: 10) == 10)
        for bad in ["-1", "many", ""] {
            let error = try #require(throws: ReservoirError.self) { try StoreConfiguration("x:y?retention=\(bad)").retention(default: 10) }
            #expect(error.message.contains("retention=\(bad)") && error.message.contains("0 to keep all"), "\(error.message)")
        }
    }

    @Test func messagesNeverShowAPassword() throws {
        let configuration = try StoreConfiguration("postgres://app:hunter2@db.internal:5432/app?readers=0")
        #expect(configuration.redacted == "postgres://app:***@db.internal:5432/app?readers=0")
        #expect(configuration.description == configuration.redacted)
        let error = configuration.invalidOption("readers", expected: "1 to 64")
        #expect(!error.description.contains("hunter2") && error.message.contains("app:***@db.internal"), "\(error.message)")
        // No password: nothing to hide.
        #expect(try StoreConfiguration("postgres://app@db/app").redacted == "postgres://app@db/app")
        #expect(try StoreConfiguration("sqlite:./a.sqlite").redacted == "sqlite:./a.sqlite")
    }
}
