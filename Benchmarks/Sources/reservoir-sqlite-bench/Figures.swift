import CSQLiteRaw
import Foundation
import GRDB
import Reservoir
import ReservoirSQLite

// MARK: - Runs

struct Figures {
    var bulkInsert = Duration.seconds(1_000_000)
    var fetchAll = Duration.seconds(1_000_000)
    var pointReads = Duration.seconds(1_000_000)
    var commits = Duration.seconds(1_000_000)
}

nonisolated(unsafe) var checksum = 0

/// The backend alone, through the SPI with rows (no Codable, no change tracking): the
/// part of each operation the SQLite backend is responsible for.
@MainActor func runSPI(_ rows: [Row]) throws -> Figures {
    var figures = Figures()
    let entity = Item.schema.entity
    let sorted = try FetchRequest<Item>(sortBy: [.ascending(\.name)]).query()
    for repetition in 0..<repetitions {
        let directory = scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = try SQLiteBackend(path: directory.appendingPathComponent("spi.sqlite").path)
        defer { backend.close() }
        figures.bulkInsert = min(figures.bulkInsert, try measure {
            try backend.write { tx in
                for row in rows { try tx.put(entity, id: row.value("id"), row: row) }
                try tx.record(ChangeSet(sequence: 1, entities: [EntityChanges(entity: "items", inserted: rows.map { RowChange(id: $0.value("id"), row: $0) })]))
            }
        })
        figures.fetchAll = min(figures.fetchAll, try measure { checksum &+= try backend.read { try $0.fetch(sorted) }.count })
        figures.pointReads = min(figures.pointReads, try measure {
            for id in lookupOrder { checksum &+= try backend.read { try $0.row("items", id: .integer(Int64(id))) }?.count ?? 0 }
        })
        figures.commits = min(figures.commits, try measure {
            for index in 0..<commitCount {
                var row = rows[lookupOrder[index] - 1]
                row["score"] = .real(Double(index + repetition))
                let sequence = UInt64(2 + repetition * commitCount + index)
                try backend.write { tx in
                    try tx.put(entity, id: row.value("id"), row: row)
                    try tx.record(ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "items", updated: [RowChange(id: row.value("id"), row: row)])]))
                }
            }
        })
    }
    return figures
}

/// Runs both sides, alternating raw and Reservoir within each repetition so that load
/// from other processes on the machine falls on both alike; keeps the best time of each.
@MainActor func runBoth(rows: [Row]) throws -> (raw: Figures, reservoir: Figures, mapped: Figures, spi: Figures, grdb: Figures) {
    var grdb = Figures()
    let grdbItems = items.map(GRDBItem.init)
    let grdbDirectory = scratchDirectory()
    defer { try? FileManager.default.removeItem(at: grdbDirectory) }
    var raw = Figures()
    var reservoir = Figures()
    var mapped = Figures()
    var spi = Figures()
    let entity = Item.schema.entity
    let spiDirectory = scratchDirectory()
    defer { try? FileManager.default.removeItem(at: spiDirectory) }
    let registry = BackendRegistry([.sqlite])
    let rawDirectory = scratchDirectory()
    let reservoirDirectory = scratchDirectory()
    defer {
        try? FileManager.default.removeItem(at: rawDirectory)
        try? FileManager.default.removeItem(at: reservoirDirectory)
    }
    let rawPath = rawDirectory.appendingPathComponent("raw.sqlite").path
    let reservoirPath = "sqlite:" + reservoirDirectory.appendingPathComponent("reservoir.sqlite").path

    for repetition in 0..<repetitions {
        // Bulk insert: the first repetition's databases are kept for the other operations.
        let rawScratch = repetition == 0 ? rawDirectory : scratchDirectory()
        let reservoirScratch = repetition == 0 ? reservoirDirectory : scratchDirectory()
        do {
            let database = RawDatabase(path: rawScratch.appendingPathComponent("raw.sqlite").path)
            raw.bulkInsert = min(raw.bulkInsert, measure { database.insert(items) })
        }
        do {
            let store = try Store.open("sqlite:" + reservoirScratch.appendingPathComponent("reservoir.sqlite").path, registry: registry)
            defer { store.close() }
            reservoir.bulkInsert = min(reservoir.bulkInsert, try measure { try store.write { tx in for item in items { try tx.insert(item) } } })
        }
        do {
            let scratch = scratchDirectory()
            defer { try? FileManager.default.removeItem(at: scratch) }
            let store = try Store.open("sqlite:" + scratch.appendingPathComponent("mapped.sqlite").path, registry: registry)
            defer { store.close() }
            mapped.bulkInsert = min(mapped.bulkInsert, try measure { try store.write { tx in for item in mappedItems { try tx.insert(item) } } })
        }
        do {
            let spiScratch = repetition == 0 ? spiDirectory : scratchDirectory()
            defer { if repetition > 0 { try? FileManager.default.removeItem(at: spiScratch) } }
            let backend = try SQLiteBackend(path: spiScratch.appendingPathComponent("spi.sqlite").path)
            defer { backend.close() }
            spi.bulkInsert = min(spi.bulkInsert, try measure {
                try backend.write { tx in
                    for row in rows { try tx.put(entity, id: row.value("id"), row: row) }
                    try tx.record(ChangeSet(sequence: 1, entities: [EntityChanges(entity: "items", inserted: rows.map { RowChange(id: $0.value("id"), row: $0) })]))
                }
            })
        }
        do {
            let scratch = repetition == 0 ? grdbDirectory : scratchDirectory()
            defer { if repetition > 0 { try? FileManager.default.removeItem(at: scratch) } }
            let pool = try openGRDB(scratch.appendingPathComponent("grdb.sqlite").path)
            grdb.bulkInsert = min(grdb.bulkInsert, try measure { try pool.write { db in for item in grdbItems { try item.insert(db) } } })
        }
        if repetition > 0 {
            try? FileManager.default.removeItem(at: rawScratch)
            try? FileManager.default.removeItem(at: reservoirScratch)
        }
    }
    say("bulk insert done")

    let database = RawDatabase(path: rawPath)
    let grdbPool = try openGRDB(grdbDirectory.appendingPathComponent("grdb.sqlite").path)
    let store = try Store.open(reservoirPath, registry: registry)
    defer { store.close() }
    let backend = try SQLiteBackend(path: spiDirectory.appendingPathComponent("spi.sqlite").path)
    defer { backend.close() }
    let sorted = FetchRequest<Item>(sortBy: [.ascending(\.name)])
    let sortedQuery = try sorted.query()
    let mappedSorted = FetchRequest<MappedItem>(sortBy: [.ascending(\.name)])
    guard try store.fetch(mappedSorted).map(\.id) == database.fetchAllSorted().map(\.id) else {
        fatalError("@RowMapped records disagree with raw SQLite")
    }
    guard try store.fetch(sorted) == database.fetchAllSorted() else {
        fatalError("Reservoir and raw SQLite disagree on the sorted records")
    }
    for _ in 0..<repetitions {
        raw.fetchAll = min(raw.fetchAll, measure { checksum &+= database.fetchAllSorted().count })
        reservoir.fetchAll = min(reservoir.fetchAll, try measure { checksum &+= try store.fetch(sorted).count })
        mapped.fetchAll = min(mapped.fetchAll, try measure { checksum &+= try store.fetch(mappedSorted).count })
        grdb.fetchAll = min(grdb.fetchAll, try measure {
            checksum &+= try grdbPool.read { db in try GRDBItem.order(Column("name"), Column("id")).fetchAll(db) }.count
        })
        spi.fetchAll = min(spi.fetchAll, try measure { checksum &+= try backend.read { try $0.fetch(sortedQuery) }.count })
    }
    say("fetch all done")
    for _ in 0..<repetitions {
        raw.pointReads = min(raw.pointReads, measure { for id in lookupOrder { checksum &+= database.get(id)?.count ?? 0 } })
        reservoir.pointReads = min(reservoir.pointReads, try measure {
            for id in lookupOrder { checksum &+= try store.get(Item.self, id: id)?.count ?? 0 }
        })
        mapped.pointReads = min(mapped.pointReads, try measure {
            for id in lookupOrder { checksum &+= try store.get(MappedItem.self, id: id)?.count ?? 0 }
        })
        grdb.pointReads = min(grdb.pointReads, try measure {
            for id in lookupOrder { checksum &+= try grdbPool.read { db in try GRDBItem.fetchOne(db, key: id) }?.count ?? 0 }
        })
        spi.pointReads = min(spi.pointReads, try measure {
            for id in lookupOrder { checksum &+= try backend.read { try $0.row("items", id: .integer(Int64(id))) }?.count ?? 0 }
        })
    }
    say("point reads done")
    for repetition in 0..<repetitions {
        raw.commits = min(raw.commits, measure {
            for index in 0..<commitCount {
                var item = items[lookupOrder[index] - 1]
                item.score += Double(repetition + 1)
                database.update(item)
            }
        })
        reservoir.commits = min(reservoir.commits, try measure {
            for index in 0..<commitCount {
                var item = items[lookupOrder[index] - 1]
                item.score += Double(repetition + 1)
                try store.write { try $0.update(item) }
            }
        })
        mapped.commits = min(mapped.commits, try measure {
            for index in 0..<commitCount {
                var item = mappedItems[lookupOrder[index] - 1]
                item.score += Double(repetition + 11)
                try store.write { try $0.update(item) }
            }
        })
        grdb.commits = min(grdb.commits, try measure {
            for index in 0..<commitCount {
                var item = grdbItems[lookupOrder[index] - 1]
                item.score += Double(repetition + 21)
                try grdbPool.write { db in try item.update(db) }
            }
        })
        spi.commits = min(spi.commits, try measure {
            for index in 0..<commitCount {
                var row = rows[lookupOrder[index] - 1]
                row["score"] = .real(Double(index + repetition))
                let sequence = UInt64(2 + repetition * commitCount + index)
                try backend.write { tx in
                    try tx.put(entity, id: row.value("id"), row: row)
                    try tx.record(ChangeSet(sequence: sequence, entities: [EntityChanges(entity: "items", updated: [RowChange(id: row.value("id"), row: row)])]))
                }
            }
        })
    }
    return (raw, reservoir, mapped, spi, grdb)
}

/// Unbuffered, so progress shows when the output is a file.
