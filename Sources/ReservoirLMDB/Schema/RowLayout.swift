import CLMDB
import Foundation
import Reservoir

/// A row's column list, stored once in `meta` under a number that version 2 rows name
/// instead of spelling their columns (see ``RowCodec``).
///
/// Layouts are append-only: a number, once committed, names the same columns for the life
/// of the environment, in every process. So a process caches every committed layout it
/// learns (``LayoutRegistry``), and a write transaction adds a new one under the next free
/// number, which other processes read from `meta` when they first meet it in a row. Rows of
/// one record type share one layout (``RowEncoder`` writes every column, nil optionals as
/// null); a field added later makes a second layout, and rows written before keep theirs.
final class RowLayout: Sendable {
    let number: UInt32
    let columns: [String]

    init(number: UInt32, columns: [String]) {
        self.number = number
        self.columns = columns
    }
}

/// The committed layouts this process knows for one environment, shared by its transactions.
/// Only committed layouts enter it: a layout a write transaction adds joins when it commits.
final class LayoutRegistry: Sendable {
    private struct Known {
        var byNumber: [UInt32: RowLayout] = [:]
        var byColumns: [[String]: RowLayout] = [:]
        /// The greatest number with these columns, when several have them.
        var newestByColumns: [[String]: RowLayout] = [:]
        /// The layout `layout(columns:)` found last: a transaction of single-record commits
        /// asks again for the same columns, usually the very same array, which compares
        /// equal without hashing the names.
        var recent: RowLayout?
    }

    private let known = Locked(Known())

    func layout(_ number: UInt32) -> RowLayout? {
        known.withLock { $0.byNumber[number] }
    }

    /// A layout with `columns` numbered `floor` or above (an entity whose columns were
    /// renamed in place writes only those, see ``RenameHistory``).
    func layout(columns: [String], atLeast floor: UInt32) -> RowLayout? {
        known.withLock { known in
            if let recent = known.recent, recent.number >= floor, recent.columns == columns { return recent }
            guard var found = known.byColumns[columns] else { return nil }
            if found.number < floor {
                guard let newest = known.newestByColumns[columns], newest.number >= floor else { return nil }
                found = newest
            }
            known.recent = found
            return found
        }
    }

    func add(_ layouts: some Sequence<RowLayout>) {
        known.withLock { known in
            for layout in layouts {
                known.byNumber[layout.number] = layout
                // Writers read every stored layout before adding one, so two numbers name the
                // same columns only when an entity renamed in place needed one above its
                // watermark: writers keep the first met, and such an entity the newest.
                if known.byColumns[layout.columns] == nil { known.byColumns[layout.columns] = layout }
                if known.newestByColumns[layout.columns].map({ $0.number < layout.number }) ?? true {
                    known.newestByColumns[layout.columns] = layout
                }
            }
        }
    }
}

extension StoreFormat {
    static let layoutKeyPrefix = Array("layout/".utf8)

    /// `layout/` then the number, 4 bytes big-endian: layouts sort by number.
    static func layoutKey(_ number: UInt32) -> [UInt8] {
        layoutKeyPrefix + withUnsafeBytes(of: number.bigEndian) { Array($0) }
    }

    /// The number a layout key names; nil when `key` is not one.
    static func layoutNumber(_ key: UnsafeRawBufferPointer) -> UInt32? {
        guard key.count == layoutKeyPrefix.count + 4, key.starts(with: layoutKeyPrefix) else { return nil }
        return key[layoutKeyPrefix.count...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// Version 1: the column count, then each name (length varint, UTF-8).
    static func encodeLayout(_ columns: [String]) -> [UInt8] {
        var out = ByteWriter()
        out.bytes.append(1)
        out.strings(columns)
        return out.bytes
    }

    static func decodeLayout(_ bytes: UnsafeRawBufferPointer) -> [String]? {
        var reader = ByteReader(bytes)
        guard reader.byte() == 1, let columns = reader.strings(), reader.isAtEnd else { return nil }
        return columns
    }
}

extension LMDBTransaction {
    /// The layout numbered `number` as this transaction sees it: nil when it stores none.
    func layout(_ number: UInt32) throws -> RowLayout? {
        if let known = environment.layouts.layout(number) { return known }
        if let mine = rowCoding.addedLayouts.first(where: { $0.number == number }) { return mine }
        return try LMDBErrors.convert(path: path) { try storedLayout(number) }
    }

    private func storedLayout(_ number: UInt32) throws -> RowLayout? {
        guard let meta = try database(StoreFormat.metaDatabase), let bytes = try get(meta, StoreFormat.layoutKey(number)) else { return nil }
        guard let columns = StoreFormat.decodeLayout(bytes) else {
            throw ReservoirError(.corrupt, "\(lmdbStore(path)): the stored column layout \(number) cannot be decoded")
        }
        let layout = RowLayout(number: number, columns: columns)
        // Not one this transaction added, so committed.
        environment.layouts.add([layout])
        return layout
    }

    /// The layout to write a row with `columns` in: a stored one with exactly these columns
    /// numbered `floor` or above (the entity's newest rename watermark, 0 when it has none),
    /// or a new one this transaction stores under the next free number.
    func writeLayout(_ columns: [String], floor: UInt32) throws -> UInt32 {
        // The columns of one record type's rows are usually one shared array, which compares
        // equal without looking at the names.
        if let number = rowCoding.lastWrittenNumber, number >= floor, columns == rowCoding.lastWrittenColumns { return number }
        let layout = try environment.layouts.layout(columns: columns, atLeast: floor)
            ?? rowCoding.addedLayouts.last { $0.number >= floor && $0.columns == columns }
            ?? storedLayout(columns, floor: floor)
        rowCoding.lastWrittenColumns = columns
        rowCoding.lastWrittenNumber = layout.number
        return layout.number
    }

    /// Reads every stored layout (another process may have added some) into the registry and
    /// returns the one with `columns` numbered `floor` or above, or stores a new one after the
    /// greatest number.
    private func storedLayout(_ columns: [String], floor: UInt32) throws -> RowLayout {
        guard let meta = try database(StoreFormat.metaDatabase, create: true) else {
            throw ReservoirError(.backend, "\(lmdbStore(path)): the metadata database is missing")
        }
        let (stored, next) = try storedLayouts(meta)
        if let found = stored.last(where: { $0.number >= floor && $0.columns == columns }) { return found }
        guard next < UInt32.max else {
            throw ReservoirError(.valueOutOfRange, "\(lmdbStore(path)): every column layout number is taken")
        }
        let layout = RowLayout(number: next, columns: columns)
        try put(meta, StoreFormat.layoutKey(layout.number), StoreFormat.encodeLayout(columns))
        rowCoding.addedLayouts.append(layout)
        return layout
    }

    /// Every layout stored in this transaction's view, by number, the committed ones added to
    /// the registry, and the next free number (one past the greatest; 0 when there is none).
    func storedLayouts(_ meta: MDB_dbi) throws -> (layouts: [RowLayout], next: UInt32) {
        var layouts: [RowLayout] = []
        var committed: [RowLayout] = []
        var next: UInt64 = 0
        try scan(meta, from: StoreFormat.layoutKeyPrefix) { key, value in
            guard key.starts(with: StoreFormat.layoutKeyPrefix) else { return false }
            guard let number = StoreFormat.layoutNumber(key), let stored = StoreFormat.decodeLayout(value) else {
                throw ReservoirError(.corrupt, "\(lmdbStore(path)): a stored column layout cannot be decoded")
            }
            next = max(next, UInt64(number) + 1)
            if let mine = rowCoding.addedLayouts.first(where: { $0.number == number }) {
                layouts.append(mine)
            } else {
                let layout = RowLayout(number: number, columns: stored)
                committed.append(layout)
                layouts.append(layout)
            }
            return true
        }
        environment.layouts.add(committed)
        // At most 2^32 - 1 numbers, so that the next free one is always a UInt32.
        return (layouts, UInt32(min(next, UInt64(UInt32.max))))
    }
}
