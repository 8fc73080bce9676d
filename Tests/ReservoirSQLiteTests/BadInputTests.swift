import Foundation
import Reservoir
@testable import ReservoirSQLite
import ReservoirConformance
import Testing

/// Bad paths, files that are not databases, locks held too long, a full disk: each is a
/// `ReservoirError` whose message names the file, and nothing committed is lost.
@Suite struct BadInputTests {
    @Test func aPathInAMissingDirectory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.url.appendingPathComponent("no/such/dir/db.sqlite").path
        let error = try #require(throws: ReservoirError.self) { try openStore(path) }
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains(path))
        #expect(error.message.contains("does not exist"))
        #expect(error.nativeCode != nil)
    }

    @Test func aDirectoryInsteadOfAFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let error = try #require(throws: ReservoirError.self) { try openStore(directory.url.path) }
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains(directory.url.path))
    }

    @Test(arguments: [
        Data("this is a text file, not a database\n".utf8),
        Data(repeating: 0xAB, count: 8192),
    ])
    func aFileThatIsNotADatabaseIsLeftAlone(contents: Data) throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.databasePath
        try contents.write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: ReservoirError.self) { try openStore(path) }
        #expect(error.code == .cannotOpen)
        #expect(error.message.contains(path))
        #expect(error.message.contains("not a SQLite database"))
        #expect(error.nativeCode == 26)  // SQLITE_NOTADB
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == contents)
    }

    @Test func aDatabaseLockedTooLongIsBusyAndNothingIsLost() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath, options: "?busytimeout=100")
        defer { store.close() }
        try store.write { try $0.insert(Todo(id: 1, title: "kept", done: false, priority: 1)) }
        let raw = try RawConnection(directory.databasePath)
        try raw.execute("BEGIN IMMEDIATE; INSERT INTO todos(id, title, done, priority) VALUES(2, 'other', 0, 1)")
        let error = try #require(throws: ReservoirError.self) {
            try store.write { try $0.insert(Todo(id: 3, title: "waits", done: false, priority: 1)) }
        }
        #expect(error.code == .busy)
        #expect(error.message.contains(directory.databasePath))
        #expect(error.nativeCode.map { $0 & 0xff } == 5)  // SQLITE_BUSY
        // Reads go on while the other process holds the write lock, and a store still opens.
        #expect(try store.fetch(Todo.self).map(\.id) == [1])
        let second = try openStore(directory.databasePath, options: "?busytimeout=100")
        second.close()
        try raw.execute("COMMIT")
        try store.write { try $0.insert(Todo(id: 3, title: "now", done: false, priority: 1)) }
        #expect(try store.fetch(Todo.self).map(\.id) == [1, 2, 3])
    }

    @Test func aFullDiskFailsTheWriteAndKeepsEarlierCommits() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { try $0.insert(Todo(id: 1, title: "kept", done: false, priority: 1)) }
        let backend = try #require(store.backend as? SQLiteBackend)
        let pages = try RawConnection(directory.databasePath).query("PRAGMA page_count")[0][0] ?? "0"
        try backend.executeOnWriter("PRAGMA max_page_count = \(Int(pages)! + 2)")
        let big = String(repeating: "x", count: 100_000)
        let error = try #require(throws: ReservoirError.self) {
            try store.write { tx in
                for id in 2...50 { try tx.insert(Todo(id: id, title: big, done: false, priority: 1)) }
            }
        }
        #expect(error.code == .full)
        #expect(error.message.contains(directory.databasePath))
        #expect(error.nativeCode.map { $0 & 0xff } == 13)  // SQLITE_FULL
        #expect(try store.fetch(Todo.self).map(\.id) == [1])
        try backend.executeOnWriter("PRAGMA max_page_count = 1073741823")
        try store.write { try $0.insert(Todo(id: 2, title: "after", done: false, priority: 1)) }
        #expect(try store.fetch(Todo.self).map(\.id) == [1, 2])
        #expect(try store.read { try $0.lastSequence() } == 2)
    }

    @Test func aNewerFormatIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        try openStore(directory.databasePath).close()
        try RawConnection(directory.databasePath).execute("UPDATE _reservoir_meta SET value = 99 WHERE key = 'format_version'")
        let error = try #require(throws: ReservoirError.self) { try openStore(directory.databasePath) }
        #expect(error.code == .corrupt)
        #expect(error.message.contains(directory.databasePath))
        #expect(error.message.contains("99"))
    }

    @Test(arguments: ["?durability=fast", "?busytimeout=-1", "?retention=many", "?readers=0", "?journal=delete"])
    func badOptionsAreRejectedByName(options: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let error = try #require(throws: ReservoirError.self) { try openStore(directory.databasePath, options: options) }
        #expect(error.code == .invalidConfiguration)
        let key = String(options.dropFirst().prefix { $0 != "=" })
        #expect(error.message.contains(key))
        #expect(!FileManager.default.fileExists(atPath: directory.databasePath))
    }

    @Test func namesThatDifferOnlyInCaseAreRejected() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try store.write { tx in
            try tx.putRow(Row([("id", 1), ("name", "a")]), in: EntityDescription(name: "people"))
        }
        let tableClash = try #require(throws: ReservoirError.self) {
            try store.write { tx in try tx.putRow(Row([("id", 1)]), in: EntityDescription(name: "People")) }
        }
        #expect(tableClash.code == .invalidSchema)
        #expect(tableClash.message.contains("People"))
        let columnClash = try #require(throws: ReservoirError.self) {
            try store.write { tx in try tx.putRow(Row([("id", 2), ("Name", "b")]), in: EntityDescription(name: "people")) }
        }
        #expect(columnClash.code == .invalidSchema)
        #expect(columnClash.message.contains("Name"))
        #expect(try store.read { try $0.rows(Query(entity: EntityDescription(name: "people"))) }.count == 1)
    }

    /// Another application's table named like a record type's once read as empty while
    /// inserts failed with "table already exists"; both are now a clear error, and the
    /// other table is left alone.
    @Test func anotherApplicationsTableIsNotTakenForAnEntity() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        // The other application creates its table while the store is open.
        let raw = try RawConnection(directory.databasePath)
        try raw.execute("CREATE TABLE Todos(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO Todos VALUES(1, 'theirs')")
        for attempt in ["fetch", "insert", "delete"] {
            let error = try #require(throws: ReservoirError.self, "\(attempt)") {
                switch attempt {
                case "fetch": _ = try store.fetch(Todo.self)
                case "insert": try store.write { try $0.insert(Todo(id: 2, title: "mine", done: false, priority: 1)) }
                default: try store.write { _ = try $0.delete(Todo.self, id: 1) }
                }
            }
            #expect(error.code == .invalidSchema, "\(attempt): \(error)")
            #expect(error.message.contains("\"Todos\"") && error.message.contains("another application") && error.message.contains(directory.databasePath), "\(attempt): \(error)")
        }
        #expect(try raw.query("SELECT id, body FROM Todos") == [["1", "theirs"]])
    }

    @Test func fullDurabilityIsAccepted() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath, options: "?durability=full")
        defer { store.close() }
        try store.write { try $0.insert(Todo(id: 1, title: "synced", done: false, priority: 1)) }
        #expect((store.backend as? SQLiteBackend)?.options.durability == .full)
    }
}
