import Foundation
import Reservoir
@testable import ReservoirLMDB
import ReservoirTestRecords

let lmdbRegistry = BackendRegistry([.lmdb])

func openStore(_ configuration: String) throws -> Store {
    try Store.open(configuration, registry: lmdbRegistry)
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
