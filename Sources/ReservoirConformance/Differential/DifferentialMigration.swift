import Foundation
import Reservoir

/// A schema version the differential test applies between writes (``DifferentialStep/migrate(_:)``),
/// with what it does to a stored row, so the model migrates its rows the same way. Each leaves
/// ``DifferentialNote`` decodable (a rename or a drop is undone within the version), so the
/// writes that follow go on with the same type, and each exercises a different step kind:
/// type changes, transforms, renames of fields and of the entity (tables dropped and made
/// again, change-log triggers with them), fields split off into an entity of their own and merged
/// back, indexes dropped and rebuilt, a field dropped and added again, and a version that fails
/// and must leave everything as it was.
public enum DifferentialMigration: String, Sendable, CaseIterable, CustomStringConvertible {
    /// `rank` converted Int? → Int?, adding 1 (wrapping).
    case shiftRanks
    /// Every `tag` uppercased by a transform.
    case upperTags
    /// `title` renamed to `title_tmp` and back.
    case renameTitleThereAndBack
    /// The index on `rank` dropped and added again.
    case reindexRanks
    /// `score` dropped and added again with no value: every score becomes nil.
    case clearScores
    /// The entity renamed to `differential_notes_tmp` and back.
    case renameEntityThereAndBack
    /// A transform that throws on a record whose rank is 3: rolls back when one exists.
    case failsOnRankThree
    /// `score` and `tag` (indexed) split off into `differential_notes_part` and merged back.
    case splitAndMergeBack

    static let entity = DifferentialNote.schema.name

    public var description: String { ".\(rawValue)" }

    var steps: [MigrationStep] {
        let entity = Self.entity
        switch self {
        case .shiftRanks:
            return [.changeType(of: "rank", in: entity, from: Int?.self, to: Int?.self) { $0.map { $0 &+ 1 } }]
        case .upperTags:
            return [.transform(entity) { row in
                if case let .text(tag) = row.value("tag") { row["tag"] = .text(tag.uppercased()) }
            }]
        case .renameTitleThereAndBack:
            return [.renameField("title", to: "title_tmp", in: entity), .renameField("title_tmp", to: "title", in: entity)]
        case .reindexRanks:
            return [.dropIndex(on: "rank", in: entity), .addIndex(on: "rank", in: entity)]
        case .clearScores:
            return [.dropField("score", from: entity), .addField("score", to: entity, default: Double?.none)]
        case .renameEntityThereAndBack:
            return [.renameEntity(entity, to: entity + "_tmp"), .renameEntity(entity + "_tmp", to: entity)]
        case .failsOnRankThree:
            return [.transform(entity) { row in
                if row.value("rank") == .integer(3) { throw ReservoirError(.misuse, "rank 3 refused on purpose") }
            }]
        case .splitAndMergeBack:
            return [.splitEntity(entity, fields: ["score", "tag"], into: entity + "_part"), .mergeEntity(entity + "_part", into: entity)]
        }
    }

    /// What the version does to one stored row; throws where the version fails.
    func apply(to row: Row) throws -> Row {
        var row = row
        switch self {
        case .shiftRanks:
            if case let .integer(rank) = row.value("rank") { row["rank"] = .integer(rank &+ 1) }
        case .upperTags:
            if case let .text(tag) = row.value("tag") { row["tag"] = .text(tag.uppercased()) }
        case .clearScores:
            row["score"] = .null
        case .failsOnRankThree:
            if row.value("rank") == .integer(3) { throw ReservoirError(.migrationFailed, "rank 3") }
        case .renameTitleThereAndBack, .reindexRanks, .renameEntityThereAndBack, .splitAndMergeBack:
            break
        }
        return row
    }
}
