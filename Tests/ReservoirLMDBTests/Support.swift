import Foundation
import Reservoir
@testable import ReservoirLMDB

let lmdbRegistry = BackendRegistry([.lmdb])

func openStore(_ configuration: String) throws -> Store {
    try Store.open(configuration, registry: lmdbRegistry)
}

struct Note: Storable {
    var id: Int
    var title: String
    var priority: Int?
    var score: Double?
    var tag: String?

    static let schema = Schema<Note>("notes", fields: [
        .field(\.id),
        .field(\.title), .field(\.priority, indexed: true), .field(\.score, indexed: true), .field(\.tag),
    ])
}

struct NoteV1: Storable {
    var id: String
    var title: String
    static let schema = Schema<NoteV1>("evolving", fields: [.field(\.title)])
}

struct NoteV2: Storable {
    var id: String
    var title: String
    var rating: Int?
    static let schema = Schema<NoteV2>("evolving", fields: [.field(\.title), .field(\.rating, indexed: true)])
}
