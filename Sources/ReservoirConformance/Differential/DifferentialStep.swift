import Foundation
import Reservoir

/// One step of a differential run. Its `description` is the Swift source that makes it, so
/// a shrunk failing sequence prints as a case ready to paste into a test.
public enum DifferentialStep: Sendable, Equatable, CustomStringConvertible {
    /// One write on the main store: the operations in order (one that throws a
    /// ``ReservoirError`` is caught, its code noted, and the transaction goes on), then,
    /// when `failing`, the closure throws and the whole write must leave nothing behind.
    case write([DifferentialOperation], failing: Bool = false)
    /// A write through a second store on the same location, after which the main store
    /// catches up. Backends without `.multiProcess` run it on the main store.
    case writeElsewhere([DifferentialOperation])
    /// Rows written, and ids deleted, by a client outside the library in one transaction
    /// (the backend's ``DifferentialBackend/ForeignWriter``, plain SQL for SQLite). Backends
    /// without one write them through a second store, or the main one.
    case foreign(put: [DifferentialNote], delete: [Int])
    /// Closes the store and opens it again (persistent backends); every subscription is
    /// cancelled and made anew on the new store, on every backend alike.
    case reopen
    /// The subscriber that holds back demand asks for `n` more values.
    case request(Int)
    /// One subscription is cancelled and a new one made for the same request.
    case resubscribe
    /// The main store migrated by the next schema version, made of `migration`'s steps
    /// (``Store/migrate(_:)``), with every subscription open across it.
    case migrate(DifferentialMigration)

    public var description: String {
        switch self {
        case let .write(operations, failing):
            ".write([\(operations.map(\.description).joined(separator: ", "))]\(failing ? ", failing: true" : ""))"
        case let .writeElsewhere(operations):
            ".writeElsewhere([\(operations.map(\.description).joined(separator: ", "))])"
        case let .foreign(put, delete):
            ".foreign(put: [\(put.map(\.description).joined(separator: ", "))], delete: \(delete))"
        case .reopen: ".reopen"
        case let .request(n): ".request(\(n))"
        case .resubscribe: ".resubscribe"
        case let .migrate(migration): ".migrate(\(migration))"
        }
    }

    /// A smaller step that keeps the step's kind, for shrinking: each drops one operation.
    var simpler: [DifferentialStep] {
        switch self {
        case let .write(operations, failing):
            return operations.indices.map { .write(operations.removing(at: $0), failing: failing) }
                + (failing ? [.write(operations)] : [])
        case let .writeElsewhere(operations):
            return operations.indices.map { .writeElsewhere(operations.removing(at: $0)) }
        case let .foreign(put, delete):
            return put.indices.map { .foreign(put: put.removing(at: $0), delete: delete) }
                + delete.indices.map { .foreign(put: put, delete: delete.removing(at: $0)) }
        case .reopen, .request, .resubscribe, .migrate:
            return []
        }
    }
}

extension Array {
    func removing(at index: Int) -> [Element] {
        var copy = self
        copy.remove(at: index)
        return copy
    }
}

// MARK: - Generating

enum DifferentialGenerator {
    /// `count` random steps from `seed`. Weighted toward writes; failing, empty and
    /// read-only writes are common on purpose, since bugs hide in what follows them.
    static func steps(seed: UInt64, count: Int) -> [DifferentialStep] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { _ in step(&g) }
    }

    static func step(_ g: inout SeededGenerator) -> DifferentialStep {
        switch g.next() % 100 {
        case 0..<42: return .write(operations(&g, upTo: 4))
        case 42..<45: return .migrate(DifferentialMigration.allCases.pick(&g))
        case 45..<55: return .write(operations(&g, upTo: 3), failing: true)
        case 55..<62: return .write([])
        case 62..<67: return .write((0..<(1 + g.next() % 3)).map { _ in read(&g) })
        case 67..<76: return .writeElsewhere(operations(&g, upTo: 3))
        case 76..<84:
            let put = (0..<(g.next() % 3)).map { _ in DifferentialNote.random(&g) }
            let delete = (0..<(g.next() % 2)).map { _ in DifferentialNote.ids.pick(&g) }
            return .foreign(put: put, delete: delete)
        case 84..<88: return .reopen
        case 88..<95: return .request(Int(1 + g.next() % 3))
        default: return .resubscribe
        }
    }

    static func operations(_ g: inout SeededGenerator, upTo limit: UInt64) -> [DifferentialOperation] {
        (0..<(1 + g.next() % limit)).map { _ in operation(&g) }
    }

    static func operation(_ g: inout SeededGenerator) -> DifferentialOperation {
        switch g.next() % 22 {
        case 0..<5: return .insert(DifferentialNote.random(&g))
        case 5..<9: return .update(DifferentialNote.random(&g))
        case 9..<13: return .upsert(DifferentialNote.random(&g))
        case 13..<15: return .delete(id: DifferentialNote.ids.pick(&g))
        case 15: return .deleteMatching(request: Int(g.next() % UInt64(DifferentialNote.requests.count)))
        case 16: return .rewrite(id: DifferentialNote.ids.pick(&g))
        case 17: return .revert(id: DifferentialNote.ids.pick(&g))
        default: return read(&g)
        }
    }

    static func read(_ g: inout SeededGenerator) -> DifferentialOperation {
        let request = Int(g.next() % UInt64(DifferentialNote.requests.count))
        switch g.next() % 3 {
        case 0: return .get(id: DifferentialNote.ids.pick(&g))
        case 1: return .fetch(request: request)
        default: return .count(request: request)
        }
    }
}
