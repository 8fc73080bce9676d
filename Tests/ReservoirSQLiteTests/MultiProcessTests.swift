import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// Commits made in another process reach this process's subscriptions: a commit
/// through Reservoir, and a row written with plain SQL by another SQLite client.
@Suite("SQLite: several processes") struct MultiProcessTests {
    /// A change set with the CLOCK_MONOTONIC time it arrived (shared by all processes).
    struct Arrival {
        var changeSet: ChangeSet
        var nanoseconds: UInt64
    }

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The second process, built beside the tests.
    static let helper = "ReservoirSQLiteTestHelper"

    /// Runs the helper to completion (at most 30 s); returns the commit time it printed.
    static func run(_ arguments: [String]) async throws -> UInt64 {
        let process = try ChildProcess(built: helper, arguments, standardError: .captured)
        guard let status = await process.waitForExit(within: 30) else {
            throw ReservoirError(.backend, "\(helper) \(arguments) did not finish within 30 s")
        }
        guard process.terminationReason == .exit, status == 0 else {
            throw ReservoirError(.backend, "\(helper) \(arguments) failed with status \(status): \(process.errorText)")
        }
        guard let line = process.output.first(where: { $0.hasPrefix("committed ") }),
              let time = UInt64(line.dropFirst("committed ".count))
        else {
            throw ReservoirError(.backend, "\(helper) printed no commit time: \(process.outputText)")
        }
        return time
    }

    func check(mode: String, arguments: (String) -> [String], expectID: Int64) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try await store.write { try $0.insert(Todo(id: 1, title: "here", done: false, priority: 1)) }
        let arrivals = Collected<Arrival>()
        let subscription = store.changeSets.sink { arrivals.append(Arrival(changeSet: $0, nanoseconds: Self.monotonicNanoseconds())) }
        defer { subscription.cancel() }
        // A live fetch, as an app shows it: the whole sorted list after each change.
        let lists = Collected<[Int]>()
        let live = store.objectsPublisher(for: FetchRequest<Todo>(sortBy: [.descending(\.priority)]))
            .sink(receiveCompletion: { _ in }, receiveValue: { lists.append($0.map(\.id)) })
        defer { live.cancel() }

        let committed = try await Self.run(arguments(directory.databasePath))
        let arrived = await eventually(timeout: .seconds(5)) { !arrivals.values.isEmpty }
        try #require(arrived, "\(mode): the other process's commit never arrived")
        let arrival = arrivals.values[0]
        let latency = Double(Int64(arrival.nanoseconds) - Int64(committed)) / 1e6
        #expect(arrival.changeSet.isExternal)
        #expect(arrival.changeSet.sequence == 2)
        #expect(arrival.changeSet.changes(to: "todos")?.inserted.map(\.id) == [.integer(expectID)])
        // The store polls every 50 ms; 250 ms leaves room for a loaded machine.
        #expect(latency < 250, "\(mode): arrived \(latency) ms after the other process committed")
        print("\(mode): arrived \(String(format: "%.1f", latency)) ms after the other process committed")
        try await Task.sleep(for: .milliseconds(200))
        #expect(arrivals.values.count == 1, "\(mode): announced more than once: \(arrivals.values.map(\.changeSet))")
        #expect(try store.fetch(Todo.self).map(\.id) == [1, Int(expectID)])
        let liveUpdated = await eventually(timeout: .seconds(5)) { lists.values.last?.contains(Int(expectID)) == true }
        #expect(liveUpdated, "\(mode): the live fetch never showed the other process's record: \(lists.values)")
        #expect(lists.values.first == [1])
    }

    @Test func aCommitInAnotherProcessReachesASubscription() async throws {
        try await check(mode: "Reservoir in another process", arguments: { [$0, "store", "42", "from child"] }, expectID: 42)
    }

    @Test func aPlainSQLWriteInAnotherProcessReachesASubscription() async throws {
        try await check(mode: "plain SQL in another process", arguments: {
            [$0, "sql", "INSERT INTO todos(id, title, done, priority) VALUES(43, 'plain SQL', 0, 2)"]
        }, expectID: 43)
    }

    @Test(arguments: ["", "?durability=full"])
    func commitsSurviveAKilledProcess(options: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        // The helper opens "sqlite:" + its first argument, so options pass through.
        let process = try ChildProcess(built: Self.helper, [directory.databasePath + options, "crash", "200"])
        _ = await eventually(timeout: .seconds(30)) { !process.isRunning }
        try #require(!process.isRunning, "the helper did not finish")
        _ = await process.waitForExit()  // it has ended: this reads what it printed to the end
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
        let printed = process.outputText
        #expect(printed.contains("committed"))
        // The -wal file holds the commits; the next open recovers them.
        let store = try openStore(directory.databasePath, options: options)
        defer { store.close() }
        #expect(try store.count(FetchRequest<Todo>()) == 200)
        #expect(try store.backend.read { try $0.lastSequence() } == 200)
        #expect(try store.get(Todo.self, id: 200)?.title == "crash 200")
    }

    @Test func concurrentWritersInOtherProcessesQueueAndEveryCommitIsAnnouncedOnce() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try await store.write { try $0.insert(Todo(id: 1, title: "here", done: false, priority: 1)) }
        let arrivals = Collected<ChangeSet>()
        let subscription = store.changeSets.sink { arrivals.append($0) }
        defer { subscription.cancel() }

        // Two processes and this one write at the same time, each its own records.
        async let first = Self.run([directory.databasePath, "many", "1000", "100"])
        async let second = Self.run([directory.databasePath, "many", "2000", "100"])
        for id in 3000..<3050 {
            try await store.write { try $0.insert(Todo(id: id, title: "local", done: false, priority: 1)) }
        }
        _ = try await (first, second)

        let all = await eventually(timeout: .seconds(10)) { arrivals.values.count >= 250 }
        try await Task.sleep(for: .milliseconds(200))  // any duplicate would arrive by now
        let seen = arrivals.values
        #expect(all, "saw \(seen.count) of 250 change sets")
        #expect(seen.count == 250)
        #expect(seen.map(\.sequence) == Array(2...251), "sequences must be consecutive, each announced once")
        let inserted = seen.flatMap { $0.changes(to: "todos")?.inserted.map(\.id) ?? [] }
        #expect(Set(inserted).count == 250)
        #expect(try store.count(FetchRequest<Todo>()) == 251)
    }

    @Test func theSQLiteShellIsAnotherClient() async throws {
        let shell = URL(fileURLWithPath: "/usr/bin/sqlite3")
        guard FileManager.default.isExecutableFile(atPath: shell.path) else { return }
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try await store.write { try $0.insert(Todo(id: 1, title: "here", done: false, priority: 1)) }
        let arrivals = Collected<ChangeSet>()
        let subscription = store.changeSets.sink { arrivals.append($0) }
        defer { subscription.cancel() }
        let process = try ChildProcess(shell, [directory.databasePath, "UPDATE todos SET title = 'from the shell' WHERE id = 1"])
        _ = await process.waitForExit()
        #expect(process.terminationStatus == 0)
        let arrived = await eventually(timeout: .seconds(5)) { !arrivals.values.isEmpty }
        try #require(arrived)
        #expect(arrivals.values[0].changes(to: "todos")?.updated.map(\.row.values) == [[1, "from the shell", 0, 1, nil]])
    }
}
