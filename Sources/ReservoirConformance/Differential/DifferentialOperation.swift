import Foundation
import Reservoir

/// What a write does with its transaction. Requests are named by their position in
/// ``DifferentialNote/requests``.
public enum DifferentialOperation: Sendable, Equatable, CustomStringConvertible {
    case insert(DifferentialNote)
    case update(DifferentialNote)
    case upsert(DifferentialNote)
    case delete(id: Int)
    case deleteMatching(request: Int)
    /// Writes the stored record back exactly as it is: no change, nothing announced.
    case rewrite(id: Int)
    /// Changes the record's title, then puts the record back in the same transaction: no
    /// change, nothing announced.
    case revert(id: Int)
    /// Reads inside the write, which must see the write's own changes.
    case get(id: Int)
    case fetch(request: Int)
    case count(request: Int)

    public var description: String {
        switch self {
        case let .insert(note): ".insert(\(note))"
        case let .update(note): ".update(\(note))"
        case let .upsert(note): ".upsert(\(note))"
        case let .delete(id): ".delete(id: \(id))"
        case let .deleteMatching(request): ".deleteMatching(request: \(request))"
        case let .rewrite(id): ".rewrite(id: \(id))"
        case let .revert(id): ".revert(id: \(id))"
        case let .get(id): ".get(id: \(id))"
        case let .fetch(request): ".fetch(request: \(request))"
        case let .count(request): ".count(request: \(request))"
        }
    }
}
