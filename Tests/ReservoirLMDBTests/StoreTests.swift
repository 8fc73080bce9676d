import Foundation
import Reservoir
import ReservoirConformance
import ReservoirTestRecords
import Testing
@testable import ReservoirLMDB

@Suite struct StoreTests {
    @Test func crudAndPersistenceAcrossReopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        do {
            let store = try openStore(configuration)
            defer { store.close() }
            try store.write { tx in
                for i in 1...20 {
                    try tx.insert(Note(id: i, title: "note \(i)", priority: i % 3 == 0 ? nil : i % 4, score: Double(i) / 2, tag: i % 2 == 0 ? "even" : nil))
                }
            }
            #expect(try store.count(FetchRequest<Note>()) == 20)
            try store.write { tx in
                try tx.update(Note(id: 1, title: "first", priority: 9, score: nil, tag: "x"))
                try tx.delete(Note.self, id: 2)
            }
            #expect(throws: ReservoirError.self) {
                try store.write { tx in try tx.insert(Note(id: 3, title: "dup")) }
            }
            #expect(try store.get(Note.self, id: 1)?.title == "first")
            #expect(try store.get(Note.self, id: 2) == nil)
        }
        let reopened = try openStore(configuration)
        defer { reopened.close() }
        #expect(try reopened.count(FetchRequest<Note>()) == 19)
        #expect(try reopened.get(Note.self, id: 1) == Note(id: 1, title: "first", priority: 9, score: nil, tag: "x"))
        #expect(try reopened.fetch(FetchRequest<Note>(where: \.priority == 9)).map(\.id) == [1])
        #expect(try reopened.read { try $0.lastSequence() } == 2)
        #expect(try reopened.fetch(FetchRequest<Note>(sortBy: [.descending(\.id)], limit: 3)).map(\.id) == [20, 19, 18])
    }

    /// Rows whose keys ascend are put with `MDB_APPEND`, others plainly: whatever the order
    /// (ascending, descending, repeated, below or at the last appended key, after deleting
    /// the greatest), inserts find taken ids and every row is stored once, in id order.
    @Test func appendedAndPlainPutsAgree() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        var model: [Int: String] = [:]
        func insert(_ tx: Transaction, _ id: Int, _ title: String) throws {
            if model[id] != nil {
                let error = #expect(throws: ReservoirError.self, "id \(id) is taken") { try tx.insert(Note(id: id, title: title)) }
                #expect(error?.code == .duplicateID, "\(String(describing: error))")
            } else {
                try tx.insert(Note(id: id, title: title))
                model[id] = title
            }
        }
        try store.write { tx in
            for id in 1...50 { try insert(tx, id, "a\(id)") }        // appended
            try insert(tx, 50, "again")                             // at the bound: taken
            try insert(tx, 20, "again")                             // below it: taken
            try insert(tx, -5, "below")                             // below it: stored plainly
            for id in 51...60 { try insert(tx, id, "b\(id)") }       // appended again
            #expect(try tx.delete(Note.self, id: 60))
            model[60] = nil
            try insert(tx, 60, "back")                              // at the bound, deleted: stored
            try insert(tx, 61, "next")
        }
        try store.write { tx in
            try insert(tx, 61, "taken")                             // a new transaction's first put: taken
            for id in stride(from: 100, to: 70, by: -3) { try insert(tx, id, "down\(id)") }
            try insert(tx, 101, "up")
            try tx.upsert(Note(id: 30, title: "updated"))
            model[30] = "updated"
        }
        try store.write { tx in try insert(tx, 62, "between") }   // below the greatest key
        let stored = try store.fetch(Note.self)
        #expect(stored.map(\.id) == model.keys.sorted())
        #expect(Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0.title) }) == model)
        for (id, title) in model { #expect(try store.get(Note.self, id: id)?.title == title) }
    }

    /// The change log keeps the newest `logretention` change sets, whatever the retention, also
    /// when a commit removes the only older one: trimmed to exactly that many every
    /// ``HistoryRetention/trimInterval`` commits, and growing by one a commit in between.
    @Test(arguments: [1, 2, 3, 7])
    func changeLogKeepsTheNewestRetainedChangeSets(retention: Int) throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env?logretention=\(retention)")
        defer { store.close() }
        let interval = Int(HistoryRetention.trimInterval)
        for i in 1...(2 * interval + 3) {
            try store.write { tx in try tx.insert(Note(id: i, title: "note \(i)")) }
            let sequences = Set(try store.backend.read { try $0.changeLog(after: 0, limit: 1000) }.map(\.sequence))
            let lastTrim = i / interval * interval
            let oldest = lastTrim == 0 ? 1 : max(1, lastTrim - retention + 1)
            #expect(sequences == Set(UInt64(oldest)...UInt64(i)), "retention \(retention), after commit \(i)")
        }
        #expect(try store.read { try $0.lastSequence() } == UInt64(2 * interval + 3))
    }

    @Test func rollbackLeavesNothing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try store.write { tx in
                try tx.insert(Note(id: 1, title: "a"))
                throw Boom()
            }
        }
        #expect(try store.count(FetchRequest<Note>()) == 0)
        #expect(try store.read { try $0.lastSequence() } == 0)
    }

    @Test func addedFieldReadsAsNilAndGetsIndexed() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let store = try openStore("lmdb:\(dir.path)/env")
        defer { store.close() }
        try store.write { tx in
            try tx.insert(NoteV1(id: "a", title: "old"))
            try tx.insert(NoteV1(id: "b", title: "older"))
        }
        #expect(try store.fetch(NoteV2.self) == [NoteV2(id: "a", title: "old", rating: nil), NoteV2(id: "b", title: "older", rating: nil)])
        try store.write { tx in try tx.insert(NoteV2(id: "c", title: "new", rating: 5)) }
        #expect(try store.fetch(FetchRequest<NoteV2>(where: \.rating == nil)).map(\.id) == ["a", "b"])
        #expect(try store.fetch(FetchRequest<NoteV2>(where: \.rating >= 1)).map(\.id) == ["c"])
        #expect(try store.read { try $0.entities() }.map(\.indexes) == [["rating"]])
    }

    /// A layout a rolled-back transaction stored is forgotten with it: its number goes to the
    /// next new layout, and rows of the first column list get a layout of their own again.
    @Test func aRolledBackLayoutIsForgotten() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env")
        defer { backend.close() }
        let first = EntityDescription(name: "first", idColumn: "id", fields: ["id", "a"])
        let second = EntityDescription(name: "second", idColumn: "id", fields: ["id", "b", "c"])
        let a = Row(columns: ["id", "a"], values: [.integer(1), .text("a")])
        let bc = Row(columns: ["id", "b", "c"], values: [.integer(1), .text("b"), .real(2)])
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try backend.write { tx in
                try tx.put(first, id: .integer(1), row: a)
                throw Boom()
            }
        }
        try backend.write { tx in try tx.put(second, id: .integer(1), row: bc) }
        try backend.write { tx in try tx.put(first, id: .integer(1), row: a) }
        #expect(try backend.read { try $0.row("second", id: .integer(1)) } == bc)
        #expect(try backend.read { try $0.row("first", id: .integer(1)) } == a)
        let numbers = try backend.read { tx in
            let t = try #require(tx as? LMDBTransaction)
            return try ["first", "second"].map { entity in
                let rows = try #require(try t.database(StoreFormat.rowsDatabase(entity)))
                let bytes = try #require(try t.get(rows, KeyEncoding.encode(.integer(1))))
                return try #require(RowCodec.header(bytes)).layout
            }
        }
        #expect(numbers == [1, 0])
    }

    /// A format 1 store, whose rows spell their column names, opens and upgrades: its rows
    /// read, sort, filter and get indexed as before, beside the layout rows written after.
    @Test func aFormatOneStoreOpensAndItsRowsReadBesideNewOnes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path + "/env"
        let entity = NoteV1.schema.entity
        // Built as the previous format stores it: version 1 rows, format 1, no layouts.
        do {
            let backend = try LMDBBackend(path: path)
            defer { backend.close() }
            try backend.write { tx in
                let t = try #require(tx as? LMDBTransaction)
                let meta = try #require(try t.database(StoreFormat.metaDatabase))
                let rows = try #require(try t.database(StoreFormat.rowsDatabase(entity.name), create: true))
                for (id, title) in [("a", "old"), ("b", "older")] {
                    let row = Row(columns: ["id", "title"], values: [.text(id), .text(title)])
                    try t.put(rows, KeyEncoding.encode(.text(id)), namedRowBytes(row))
                }
                try t.put(meta, StoreFormat.entityKey(entity.name), StoreFormat.encode(entity))
                try t.put(meta, StoreFormat.formatKey, [0, 0, 0, 1])
            }
        }
        let store = try openStore("lmdb:\(path)")
        defer { store.close() }
        #expect(try store.fetch(FetchRequest<NoteV2>(sortBy: [.descending(\.title)])).map(\.id) == ["b", "a"])
        try store.write { tx in try tx.insert(NoteV2(id: "c", title: "new", rating: 5)) }
        #expect(try store.fetch(FetchRequest<NoteV2>(sortBy: [.ascending(\.title)])).map(\.id) == ["c", "a", "b"])
        #expect(try store.fetch(FetchRequest<NoteV2>(where: \.rating == nil)).map(\.id) == ["a", "b"])
        #expect(try store.fetch(FetchRequest<NoteV2>(where: \.rating >= 1)).map(\.id) == ["c"])
        #expect(try store.fetch(FetchRequest<NoteV2>(where: \.title == "older")) == [NoteV2(id: "b", title: "older", rating: nil)])
        #expect(try store.read { try $0.get(NoteV2.self, id: "a") } == NoteV2(id: "a", title: "old", rating: nil))
        let backend = try #require(store.backend as? LMDBBackend)
        let (format, versions) = try backend.read { tx in
            let t = try #require(tx as? LMDBTransaction)
            let meta = try #require(try t.database(StoreFormat.metaDatabase))
            let rows = try #require(try t.database(StoreFormat.rowsDatabase(entity.name)))
            let format = try #require(try t.get(meta, StoreFormat.formatKey)).map { $0 }
            let versions = try ["a", "c"].map { id in try #require(try t.get(rows, KeyEncoding.encode(.text(id)))).first }
            return (format, versions)
        }
        #expect(format == [0, 0, 0, 4])
        #expect(versions == [RowCodec.namedVersion, RowCodec.version])
    }

    @Test func corruptRowIsAnErrorNamingEntityAndID() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let backend = try LMDBBackend(path: dir.path + "/env")
        defer { backend.close() }
        let entity = Note.schema.entity
        try backend.write { tx in try tx.put(entity, id: .integer(7), row: Row(columns: ["id", "title"], values: [.integer(7), .text("x")])) }
        // Overwrite the row with garbage behind the backend's back.
        try backend.write { tx in
            let t = try #require(tx as? LMDBTransaction)
            let rows = try #require(try t.database(StoreFormat.rowsDatabase("notes")))
            try t.put(rows, KeyEncoding.encode(.integer(7)), [9, 9, 9])
        }
        let error = try #require(throws: ReservoirError.self) { try backend.read { try $0.row("notes", id: .integer(7)) } }
        #expect(error.code == .corrupt)
        #expect(error.message.contains("\"notes\"") && error.message.contains("id 7"), "\(error)")
        let fetchError = try #require(throws: ReservoirError.self) {
            try backend.read { try $0.fetch(Query(entity: entity)) }
        }
        #expect(fetchError.code == .corrupt)
    }

    @Test func nestingAcrossStoresOnOneEnvironment() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let configuration = "lmdb:\(dir.path)/env"
        let first = try openStore(configuration)
        defer { first.close() }
        let second = try openStore(configuration)
        defer { second.close() }
        // A write inside another store's write on the same thread would wait for itself.
        let error = try #require(throws: ReservoirError.self) {
            try first.write { tx in
                try tx.insert(Note(id: 1, title: "outer"))
                try second.write { inner in try inner.insert(Note(id: 2, title: "inner")) }
            }
        }
        #expect(error.code == .misuse)
        #expect(try first.count(FetchRequest<Note>()) == 0)
        // Reads inside a write see the committed state; a write inside a read is fine.
        try first.write { tx in
            try tx.insert(Note(id: 3, title: "pending"))
            #expect(try second.count(FetchRequest<Note>()) == 0)
        }
        try second.read { snapshot in
            try first.write { tx in try tx.insert(Note(id: 4, title: "while reading")) }
            #expect(try snapshot.fetch(Note.self).map(\.id) == [3])
        }
        #expect(try second.fetch(Note.self).map(\.id) == [3, 4])
    }
}

/// LMDB may commit a page it allocated at the end of the file and freed again in the same
/// transaction (a "loose" page): listed as free, never written, so data.mdb ends before the
/// last page its meta page counts. Trimming the change log (which frees the pages of the
/// records it deletes) makes that common; such a file is sound and must not be taken for a
/// truncated one.
@Suite("LMDB: a file ending in free pages")
struct LoosePageTests {
    @Test func aFileEndingInFreePagesIsNotTakenForATruncatedOne() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = "\(dir.path)/env"
        LMDBEnvironment.soundShortFiles.withLock { $0[path] = nil }
        var shortFilesSeen = 0
        var generator = SystemRandomNumberGenerator()
        for i in 1...600 {
            // Random ids and sizes, as an app's UUIDs and texts: pages split, merge and free.
            // Each write on an environment of its own, as each process of a command-line tool
            // has: LMDB then reads the free-page list afresh for the transaction.
            let id = UUID().uuidString
            let writer = try openStore("lmdb:\(path)?retention=5")
            // A consumer holds the history for 70 commits of every 140, so trims drop whole runs.
            if i % 140 == 1 { try writer.retainHistory(for: "consumer", from: try writer.currentHistoryToken) }
            if i % 140 == 71 { try writer.releaseHistory(for: "consumer") }
            try writer.write { tx in
                try tx.insert(NoteV1(id: id, title: String(repeating: "n", count: Int.random(in: 0...900, using: &generator))))
            }
            writer.close()
            // Another store on the location checks the file when its transactions begin.
            let reader = try openStore("lmdb:\(path)")
            #expect(try reader.get(NoteV1.self, id: id)?.id == id, "commit \(i) read back")
            reader.close()
            if LMDBEnvironment.soundShortFiles.withLock({ $0[path] }) != nil {
                shortFilesSeen += 1
                LMDBEnvironment.soundShortFiles.withLock { $0[path] = nil }
            }
        }
        #expect(shortFilesSeen > 0, "the run left data.mdb shorter than its pages at least once (else it tests nothing)")
        let store = try openStore("lmdb:\(path)")
        defer { store.close() }
        let report = try store.verify()
        #expect(report.isIntact, "verify finds nothing wrong: \(report.problems)")
    }
}
