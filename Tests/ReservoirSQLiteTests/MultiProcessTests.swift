import Foundation
import OpenCombineShim
import Reservoir
import ReservoirConformance
import ReservoirSQLite
import Testing

/// Commits made in another process reach this process's subscriptions: a commit
/// through Reservoir, and a row written with plain SQL by another SQLite client.
@Suite struct TwoProcessTests {
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

    /// The helper executable, built next to the test bundle.
    static func helper() throws -> URL {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("reservoir-sqlite-writer")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw ReservoirError(.backend, "reservoir-sqlite-writer not found near \(executable.path); run swift build first")
    }

    /// Runs a child process to completion (at most 30 s); returns the commit time it printed.
    static func run(_ executable: URL, _ arguments: [String]) async throws -> UInt64 {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        if process.isRunning {
            process.terminate()
            throw ReservoirError(.backend, "\(executable.lastPathComponent) \(arguments) did not finish within 30 s")
        }
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw ReservoirError(.backend, "\(executable.lastPathComponent) \(arguments) failed with status \(process.terminationStatus): \(problem)")
        }
        guard let line = printed.split(separator: "\n").first(where: { $0.hasPrefix("committed ") }),
              let time = UInt64(line.dropFirst("committed ".count))
        else {
            throw ReservoirError(.backend, "\(executable.lastPathComponent) printed no commit time: \(printed)")
        }
        return time
    }

    func check(mode: String, arguments: (String) -> [String], expectID: Int64) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
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

        let committed = try await Self.run(try Self.helper(), arguments(directory.databasePath))
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
        defer { directory.cleanup() }
        let process = Process()
        process.executableURL = try Self.helper()
        // The helper opens "sqlite:" + its first argument, so options pass through.
        process.arguments = [directory.databasePath + options, "crash", "200"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        try #require(!process.isRunning, "the helper did not finish")
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
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
        defer { directory.cleanup() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try await store.write { try $0.insert(Todo(id: 1, title: "here", done: false, priority: 1)) }
        let arrivals = Collected<ChangeSet>()
        let subscription = store.changeSets.sink { arrivals.append($0) }
        defer { subscription.cancel() }

        // Two processes and this one write at the same time, each its own records.
        let helper = try Self.helper()
        async let first = Self.run(helper, [directory.databasePath, "many", "1000", "100"])
        async let second = Self.run(helper, [directory.databasePath, "many", "2000", "100"])
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
        defer { directory.cleanup() }
        let store = try openStore(directory.databasePath)
        defer { store.close() }
        try await store.write { try $0.insert(Todo(id: 1, title: "here", done: false, priority: 1)) }
        let arrivals = Collected<ChangeSet>()
        let subscription = store.changeSets.sink { arrivals.append($0) }
        defer { subscription.cancel() }
        let process = try Process.run(shell, arguments: [directory.databasePath, "UPDATE todos SET title = 'from the shell' WHERE id = 1"])
        while process.isRunning { try await Task.sleep(for: .milliseconds(2)) }
        #expect(process.terminationStatus == 0)
        let arrived = await eventually(timeout: .seconds(5)) { !arrivals.values.isEmpty }
        try #require(arrived)
        #expect(arrivals.values[0].changes(to: "todos")?.updated.map(\.row.values) == [[1, "from the shell", 0, 1, nil]])
    }
}
