import Foundation
import Reservoir
import ReservoirConformance
@testable import ReservoirLMDB

/// A fresh temporary directory, removed by `cleanUp`.
struct TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/reservoir-lmdb-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

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

/// ReservoirLMDBTestHelper, the second process of the multi-process tests, run through
/// the suite's one launcher.
typealias Helper = ChildProcess

extension ChildProcess {
    convenience init(_ arguments: [String], environment: [String: String] = [:]) throws {
        try self.init(try ChildProcess.builtExecutable("ReservoirLMDBTestHelper"), arguments, environment: environment)
    }
}
