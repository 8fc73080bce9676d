import Foundation
import Reservoir

/// The whole store as one JSON file: values with their exact bits (reals by bit pattern,
/// text and blobs as base64 of their bytes), so only a planted bug changes them on save.
struct PlantedFile: Codable {
    struct SavedValue: Codable {
        var k: String
        var v: String
    }
    struct SavedRow: Codable {
        var id: SavedValue
        var columns: [String]
        var values: [SavedValue]
    }
    struct SavedTable: Codable {
        var name: String
        var idColumn: String
        var fields: [String]
        var indexes: [String]
        var integerIDs: Bool
        var rows: [SavedRow]
    }
    struct SavedEntry: Codable {
        var sequence: UInt64
        var commit: UInt64?
        var entity: String
        var id: SavedValue
        var kind: UInt8
    }

    var sequence: UInt64
    var identity: UUID?
    var tables: [SavedTable]
    var log: [SavedEntry]

    // MARK: - Saving

    init(_ state: PlantedState, bugs: Set<PlantedBug>) {
        let save = { (value: Value) in Self.save(value, bugs: bugs) }
        sequence = bugs.contains(.lastSequenceNotSaved) ? 0 : state.log.lastSequence
        identity = state.identity
        tables = state.tables.values.sorted { $0.entity.name < $1.entity.name }.map { table in
            SavedTable(
                name: table.entity.name, idColumn: table.entity.idColumn, fields: table.entity.fields,
                indexes: table.entity.indexes, integerIDs: table.entity.integerIDs,
                rows: table.rows.map { id, row in SavedRow(id: save(id), columns: row.columns, values: row.values.map(save)) }
            )
        }
        log = bugs.contains(.changeLogNotPersisted) ? [] : state.log.entries.map { entry in
            SavedEntry(sequence: entry.sequence, commit: entry.commit, entity: entry.entity, id: save(entry.id), kind: ChangeLogCodec.kindByte(entry.kind))
        }
    }

    static func save(_ value: Value, bugs: Set<PlantedBug>) -> SavedValue {
        switch value {
        case .null:
            return SavedValue(k: "n", v: "")
        case let .integer(number):
            return SavedValue(k: "i", v: String(number))
        case var .real(number):
            if bugs.contains(.negativeZeroSavedAsZero) && number == 0 { number = 0 }
            return SavedValue(k: "r", v: String(number.bitPattern, radix: 16))
        case var .text(text):
            if bugs.contains(.textNormalisedOnSave) { text = text.precomposedStringWithCanonicalMapping }
            return SavedValue(k: "t", v: Data(text.utf8).base64EncodedString())
        case let .blob(bytes):
            return SavedValue(k: "b", v: bytes.base64EncodedString())
        }
    }

    // MARK: - Loading

    func state(path: String, retention: Int) throws -> PlantedState {
        let load = { (value: SavedValue) in try Self.load(value, path: path) }
        var loaded: [String: PlantedState.Table] = [:]
        for saved in tables {
            let entity = EntityDescription(name: saved.name, idColumn: saved.idColumn, fields: saved.fields, indexes: saved.indexes, integerIDs: saved.integerIDs)
            var table = PlantedState.Table(entity: entity)
            for row in saved.rows {
                guard row.columns.count == row.values.count else { throw Self.corrupt(path, "a row of \(saved.name) has \(row.columns.count) columns and \(row.values.count) values") }
                table.rows[try load(row.id)] = Row(columns: row.columns, values: try row.values.map(load))
            }
            loaded[saved.name] = table
        }
        let entries = try log.map { saved in
            guard let kind = ChangeLogCodec.kind(saved.kind) else { throw Self.corrupt(path, "change kind \(saved.kind)") }
            return ChangeLogEntry(sequence: saved.sequence, entity: saved.entity, id: try load(saved.id), kind: kind, commit: saved.commit ?? 0)
        }
        return PlantedState(tables: loaded, log: RetainedChangeLog(retention: retention, lastSequence: sequence, entries: entries),
                            identity: identity ?? UUID())
    }

    static func load(_ saved: SavedValue, path: String) throws -> Value {
        switch saved.k {
        case "n":
            return .null
        case "i":
            guard let number = Int64(saved.v) else { break }
            return .integer(number)
        case "r":
            guard let bits = UInt64(saved.v, radix: 16) else { break }
            return .real(Double(bitPattern: bits))
        case "t":
            guard let bytes = Data(base64Encoded: saved.v) else { break }
            return .text(String(decoding: bytes, as: UTF8.self))
        case "b":
            guard let bytes = Data(base64Encoded: saved.v) else { break }
            return .blob(bytes)
        default:
            break
        }
        throw corrupt(path, "a value of kind \"\(saved.k)\" reads \"\(saved.v.prefix(40))\"")
    }

    static func corrupt(_ path: String, _ what: String) -> ReservoirError {
        ReservoirError(.corrupt, "planted store \"\(path)\": \(what)")
    }
}
