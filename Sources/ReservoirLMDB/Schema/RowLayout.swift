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
        /// The layout `layout(columns:)` found last: a transaction of single-record commits
        /// asks again for the same columns, usually the very same array, which compares
        /// equal without hashing the names.
        var recent: RowLayout?
    }

    private let known = Locked(Known())

    func layout(_ number: UInt32) -> RowLayout? {
        known.withLock { $0.byNumber[number] }
    }

    func layout(columns: [String]) -> RowLayout? {
        known.withLock { known in
            if let recent = known.recent, recent.columns == columns { return recent }
            let found = known.byColumns[columns]
            if found != nil { known.recent = found }
            return found
        }
    }

    func add(_ layouts: some Sequence<RowLayout>) {
        known.withLock { known in
            for layout in layouts {
                known.byNumber[layout.number] = layout
                // Writers read every stored layout before adding one, so no two numbers
                // should name the same columns; should they, writers keep the first met.
                if known.byColumns[layout.columns] == nil { known.byColumns[layout.columns] = layout }
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

    /// The layout to write a row with `columns` in: a stored one with exactly these columns,
    /// or a new one this transaction stores under the next free number.
    func writeLayout(_ columns: [String]) throws -> UInt32 {
        // The columns of one record type's rows are usually one shared array, which compares
        // equal without looking at the names.
        if let number = rowCoding.lastWrittenNumber, columns == rowCoding.lastWrittenColumns { return number }
        let layout = try environment.layouts.layout(columns: columns)
            ?? rowCoding.addedLayouts.first { $0.columns == columns }
            ?? storedLayout(columns)
        rowCoding.lastWrittenColumns = columns
        rowCoding.lastWrittenNumber = layout.number
        return layout.number
    }

    /// Reads every stored layout (another process may have added some) into the registry and
    /// returns the one with `columns`, or stores a new one after the greatest number.
    private func storedLayout(_ columns: [String]) throws -> RowLayout {
        guard let meta = try database(StoreFormat.metaDatabase, create: true) else {
            throw ReservoirError(.backend, "\(lmdbStore(path)): the metadata database is missing")
        }
        var committed: [RowLayout] = []
        var next: UInt64 = 0
        try scan(meta, from: StoreFormat.layoutKeyPrefix) { key, value in
            guard key.starts(with: StoreFormat.layoutKeyPrefix) else { return false }
            guard let number = StoreFormat.layoutNumber(key), let stored = StoreFormat.decodeLayout(value) else {
                throw ReservoirError(.corrupt, "\(lmdbStore(path)): a stored column layout cannot be decoded")
            }
            next = max(next, UInt64(number) + 1)
            if !rowCoding.addedLayouts.contains(where: { $0.number == number }) {
                committed.append(RowLayout(number: number, columns: stored))
            }
            return true
        }
        environment.layouts.add(committed)
        if let found = committed.first(where: { $0.columns == columns }) { return found }
        guard next <= UInt64(UInt32.max) else {
            throw ReservoirError(.valueOutOfRange, "\(lmdbStore(path)): every column layout number is taken")
        }
        let layout = RowLayout(number: UInt32(next), columns: columns)
        try put(meta, StoreFormat.layoutKey(layout.number), StoreFormat.encodeLayout(columns))
        rowCoding.addedLayouts.append(layout)
        return layout
    }
}
