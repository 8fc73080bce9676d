import Foundation
import Reservoir
@testable import ReservoirLMDB
import ReservoirConformance
import ReservoirTestRecords
import Testing

/// Stored entity descriptions round-trip whole, so a typed write after reopening finds the
/// description unchanged instead of rewriting it.
@Suite struct EntityDescriptionTests {
    @Test func entitiesReturnTheIntegerIDsFlagAsWrittenAcrossReopening() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        do {
            let store = try openStore(configuration)
            try store.write { tx in
                try tx.insert(Note(id: 1, title: "n"))
                try tx.insert(NoteV1(id: "a", title: "v1"))
            }
            #expect(try store.read { try $0.entities() } == [NoteV1.schema.entity, Note.schema.entity])
            store.close()
        }
        let store = try openStore(configuration)
        defer { store.close() }
        let entities = try store.read { try $0.entities() }
        #expect(entities == [NoteV1.schema.entity, Note.schema.entity])
        #expect(entities.map(\.integerIDs) == [false, true])
        // A row tool's description (flag unknown) replaces it as last written.
        try store.write { tx in
            _ = try tx.putRow(Row([("id", 2), ("title", "raw")]), in: EntityDescription(name: "notes", fields: Note.schema.entity.fields))
        }
        #expect(try store.read { try $0.entities() }.last?.integerIDs == false)
    }

    @Test(arguments: [false, true])
    func descriptionsRoundTripAndVersionOneStillDecodes(_ integerIDs: Bool) throws {
        let entity = EntityDescription(name: "e", idColumn: "key", fields: ["key", "a", "b"], indexes: ["b"], integerIDs: integerIDs)
        let encoded = ReservoirLMDB.StoreFormat.encode(entity)
        #expect(encoded.first == (integerIDs ? 2 : 1), "flagless descriptions keep the version 1 encoding")
        #expect(encoded.withUnsafeBytes { ReservoirLMDB.StoreFormat.decodeEntity($0) } == entity)
        // Version 1, as written before the flag existed, decodes with the flag false.
        var old = encoded
        if integerIDs {
            old[0] = 1
            old.removeLast()
        }
        #expect(old.withUnsafeBytes { ReservoirLMDB.StoreFormat.decodeEntity($0) }?.integerIDs == false)
        // Damaged: unknown version, unknown flag bits, missing or extra bytes.
        for damaged in [[9] + encoded.dropFirst(), [2] + old.dropFirst() + [2], [2] + old.dropFirst(), encoded + [0]] {
            #expect(damaged.withUnsafeBytes { ReservoirLMDB.StoreFormat.decodeEntity($0) } == nil, "\(damaged)")
        }
    }
}
