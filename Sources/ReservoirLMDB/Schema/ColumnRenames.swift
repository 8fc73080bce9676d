import Foundation
import Reservoir

/// The columns of one entity renamed in place (`meta` `renames/NAME`): a migration's field
/// rename writes an entry instead of rewriting every row.
///
/// Rows do not spell their columns; they name a ``RowLayout``, which is shared by every entity
/// and never changes. So a rename cannot touch the layouts: it records its renames with a
/// *watermark*, the next free layout number when it ran. Every row of the entity written
/// before it names a layout below the watermark; a row of the entity naming layout `L` reads
/// the layout's columns through each entry whose watermark is above `L`, oldest first. A row
/// written afterwards names a layout at or above the newest watermark (``floor``; the writer
/// stores a new layout rather than reuse an older number with the same columns), so no entry
/// applies to it. Entries are only ever appended, and the object for a history is never
/// changed: a later rename makes a new one, with an empty cache of renamed layouts.
final class RenameHistory: Sendable {
    struct Entry: Equatable, Sendable {
        /// The next free layout number when the rename ran: rows naming a lower one predate it.
        let watermark: UInt32
        /// Old name to new name, applied together.
        let renames: [Rename]
    }

    struct Rename: Equatable, Sendable {
        let old: String
        let new: String
    }

    /// Oldest first; watermarks never decrease.
    let entries: [Entry]
    /// The newest watermark: the least layout number a new row of the entity may name.
    let floor: UInt32
    /// Layouts below ``floor`` as this entity reads them, by number.
    private let views = Locked<[UInt32: RowLayout]>([:])

    init(entries: [Entry]) {
        self.entries = entries
        floor = entries.last?.watermark ?? 0
    }

    /// `layout` as rows of this entity read it: its columns renamed by every entry whose
    /// watermark is above its number. The layout itself when none is (a row written since).
    @inline(__always)
    func view(of layout: RowLayout) -> RowLayout {
        guard layout.number < floor else { return layout }
        return views.withLock { views in
            if let known = views[layout.number] { return known }
            let view = RowLayout(number: layout.number, columns: renamed(layout.columns, from: layout.number))
            views[layout.number] = view
            return view
        }
    }

    /// `columns`, of a layout numbered `number` (nil: a version 1 row, older than every
    /// entry), renamed by each entry that applies, oldest first.
    func renamed(_ columns: [String], from number: UInt32?) -> [String] {
        var columns = columns
        for entry in entries where number.map({ $0 < entry.watermark }) ?? true {
            let map = Dictionary(entry.renames.map { ($0.old, $0.new) }, uniquingKeysWith: { first, _ in first })
            columns = columns.map { map[$0] ?? $0 }
        }
        return columns
    }

    /// The name a version 1 row (older than every entry) spells the column read as `column`
    /// with; nil when no such row can hold it (an entry renamed that name away).
    func originalName(of column: String) -> String? {
        var name = column
        for entry in entries.reversed() {
            if let rename = entry.renames.first(where: { $0.new == name }) {
                name = rename.old
            } else if entry.renames.contains(where: { $0.old == name }) {
                return nil
            }
        }
        return name
    }

    /// This history with `entry` appended.
    func appending(_ entry: Entry) -> RenameHistory {
        RenameHistory(entries: entries + [entry])
    }
}

/// Every entity's ``RenameHistory`` as one snapshot sees them. Cached by the environment per
/// committed transaction id, like the stored descriptions; a write that renames makes a new one.
final class StoreRenames: Sendable {
    let byEntity: [String: RenameHistory]

    static let none = StoreRenames(byEntity: [:])

    init(byEntity: [String: RenameHistory]) {
        self.byEntity = byEntity
    }

    /// The entity's history; nil when its columns were never renamed in place.
    @inline(__always)
    func history(_ entity: String) -> RenameHistory? {
        byEntity.isEmpty ? nil : byEntity[entity]
    }
}

extension StoreFormat {
    static let renamesKeyPrefix = Array("renames/".utf8)

    static func renamesKey(_ entity: String) -> [UInt8] { renamesKeyPrefix + Array(entity.utf8) }

    /// Version 1: the entry count, then per entry its watermark (varint), the rename count and
    /// each rename's old and new name.
    static func encodeRenames(_ history: RenameHistory) -> [UInt8] {
        var out = ByteWriter()
        out.bytes.append(1)
        out.varint(UInt64(history.entries.count))
        for entry in history.entries {
            out.varint(UInt64(entry.watermark))
            out.varint(UInt64(entry.renames.count))
            for rename in entry.renames {
                out.string(rename.old)
                out.string(rename.new)
            }
        }
        return out.bytes
    }

    /// Nil when the bytes are not a history: an unknown version, truncated, watermarks that
    /// decrease, an entry without renames.
    static func decodeRenames(_ bytes: UnsafeRawBufferPointer) -> RenameHistory? {
        var reader = ByteReader(bytes)
        guard reader.byte() == 1, let count = reader.varint(), count > 0, count <= UInt64(bytes.count) else { return nil }
        var entries: [RenameHistory.Entry] = []
        for _ in 0..<count {
            guard let watermark = reader.varint(), watermark <= UInt64(UInt32.max),
                  UInt32(watermark) >= entries.last?.watermark ?? 0,
                  let renameCount = reader.varint(), renameCount > 0, renameCount <= UInt64(bytes.count)
            else { return nil }
            var renames: [RenameHistory.Rename] = []
            for _ in 0..<renameCount {
                guard let old = reader.string(), let new = reader.string() else { return nil }
                renames.append(RenameHistory.Rename(old: old, new: new))
            }
            entries.append(RenameHistory.Entry(watermark: UInt32(watermark), renames: renames))
        }
        return reader.isAtEnd ? RenameHistory(entries: entries) : nil
    }
}
