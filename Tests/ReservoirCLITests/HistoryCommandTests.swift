import Foundation
import Reservoir
import ReservoirConformance
import ReservoirLMDB
import Testing

@Suite("reservoir history")
struct HistoryCommandTests {
    @Test("history prints every change set after a token, plain SQL's too, follows live, and refuses a bad token in one line")
    func historyAfterATokenAndLive() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let store = ["--store", "sqlite:./todos.sqlite"]
        _ = try await CLIProcess.run(["todo", "add", "Buy milk"] + store, in: scratch.url)
        let token = try await CLIProcess.run(["history", "--token"] + store, in: scratch.url)
        #expect(token.status == 0, "\(token.errors)")
        let saved = token.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(saved.hasPrefix("rsv1.") && saved.hasSuffix(saved.split(separator: ".").last.map(String.init) ?? "?"), "a token: \(saved)")
        let added = try await CLIProcess.run(["todo", "add", "File taxes"] + store, in: scratch.url)
        let id = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
        try plainSQL(scratch.url.appendingPathComponent("todos.sqlite").path, "UPDATE todos SET priority = 9 WHERE title = 'Buy milk'")

        let since = try await CLIProcess.run(["history", "--after", saved, "--json"] + store, in: scratch.url)
        #expect(since.status == 0, "\(since.errors)")
        let lines = since.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.map { $0["origin"] as? String } == ["library", "otherClient"], "\(since.output)")
        let first = (lines.first?["changes"] as? [[String: Any]])?.first
        #expect(first?["id"] as? String == id && first?["kind"] as? String == "inserted", "\(since.output)")
        let whole = try await CLIProcess.run(["history"] + store, in: scratch.url)
        #expect(whole.output.split(separator: "\n").count == 4, "from the beginning: the new store stamped with the to-do schema versions, then three change sets: \(whole.output)")

        let follow = try CLIProcess(["history", "--follow", "--count", "3", "--after", saved] + store, in: scratch.url)
        try await follow.waitForLines(2)
        _ = try await CLIProcess.run(["todo", "add", "Water the plants"] + store, in: scratch.url)
        #expect(try await follow.waitForExit(seconds: 30) == 0, "history --follow exits after --count change sets: \(follow.errors)")
        #expect(follow.lines.count == 3 && follow.lines.last?.contains("inserted") == true, "\(follow.output)")

        let bad = try await CLIProcess.run(["history", "--after", "rsv1.nonsense"] + store, in: scratch.url)
        #expect(bad.status != 0 && bad.errors.split(separator: "\n").count == 1 && bad.errors.contains("rsv1.nonsense"), "\(bad.errors)")
        let foreign = try await CLIProcess.run(["history", "--after", saved, "--store", "sqlite:./other.sqlite"], in: scratch.url)
        #expect(foreign.status != 0 && foreign.errors.contains("not of this store"), "\(foreign.errors)")
    }

    @Test("history --retain holds the history for a consumer past retention, info lists the hold, --release lets it go")
    func consumerHolds() async throws {
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let store = ["--store", "lmdb:./todos.lmdb?retention=5"]
        _ = try await CLIProcess.run(["todo", "add", "first"] + store, in: scratch.url)
        let saved = try await CLIProcess.run(["history", "--token"] + store, in: scratch.url).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let held = try await CLIProcess.run(["history", "--retain", "indexer", "--after", saved] + store, in: scratch.url)
        #expect(held.status == 0 && held.output.contains("indexer"), "\(held.errors)")
        // Past a trim (every 64 commits) with retention=5: another process's commits (this
        // test's, through the library: 140 tool launches took minutes on loaded cores).
        try Self.commit(0..<70, to: scratch.file("todos.lmdb"))
        let info = try await CLIProcess.run(["info", "--json"] + store, in: scratch.url)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(info.output.utf8)) as? [String: Any])
        let history = try #require(object["history"] as? [String: Any], "\(info.output)")
        let holds = history["holds"] as? [[String: Any]]
        #expect(holds?.map { $0["consumer"] as? String } == ["indexer"] && holds?.first?["token"] as? String == saved, "\(info.output)")
        let since = try await CLIProcess.run(["history", "--after", saved] + store, in: scratch.url)
        #expect(since.status == 0, "the held history is answered past retention=5: \(since.errors)")
        let released = try await CLIProcess.run(["history", "--release", "indexer"] + store, in: scratch.url)
        #expect(released.status == 0 && released.output.contains("released"), "\(released.output) \(released.errors)")
        try Self.commit(70..<140, to: scratch.file("todos.lmdb"))
        let gone = try await CLIProcess.run(["history", "--after", saved] + store, in: scratch.url)
        #expect(gone.status != 0 && gone.errors.contains("no longer reaches back"), "after the release, retention let it go: \(gone.errors)")
    }

    /// A commit of one new record for each of `numbers` to the LMDB store at `path`, keeping five
    /// change sets.
    static func commit(_ numbers: Range<Int>, to path: String) throws {
        let store = try Store.open("lmdb:\(path)?retention=5", registry: BackendRegistry([.lmdb]))
        defer { store.close() }
        let filler = EntityDescription(name: "filler", idColumn: "id", fields: ["id", "n"], indexes: [])
        for number in numbers {
            try store.write { tx in try tx.putRow(Row(columns: ["id", "n"], values: [.integer(Int64(number)), .integer(Int64(number))]), in: filler) }
        }
    }
}
