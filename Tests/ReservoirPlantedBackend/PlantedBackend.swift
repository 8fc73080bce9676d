import Foundation
import Reservoir

/// A small file backend written only against the public SPI, as a third party would (the
/// `jsonfile:` backend of issue #38): rows in memory, the whole store rewritten as one JSON
/// file renamed into place on each commit. Persistent, single-process. Each `PlantedBug`
/// can be switched on with `?bug=NAME` to show that certification catches it; without one
/// it passes certification.
public final class PlantedBackend: StorageBackend {
    /// `planted:PATH[?bug=NAME&retention=N]`.
    public static let factory = factory(scheme: "planted")

    /// The factory under another scheme (`SCHEME:PATH[?bug=NAME&retention=N]`).
    public static func factory(scheme: String) -> BackendFactory {
        BackendFactory(scheme: scheme, summary: "\(scheme):PATH[?bug=NAME&retention=N]") { configuration in
            try configuration.checkOptions(allowed: ["bug", "retention"])
            var bugs: Set<PlantedBug> = []
            if let name = configuration.options["bug"] {
                guard let bug = PlantedBug(rawValue: name) else {
                    throw configuration.invalidOption("bug", expected: PlantedBug.allCases.map(\.rawValue).joined(separator: ", "))
                }
                bugs.insert(bug)
            }
            return try PlantedBackend(path: configuration.location, bugs: bugs, retention: configuration.retention(default: 10_000))
        }
    }

    /// Locations open in this process: a backend without `multiProcess` lets one opener in at a time.
    private static let openPaths = Locked<Set<String>>([])

    public let location: String
    let bugs: Set<PlantedBug>
    let retention: Int
    private let state: Locked<PlantedState>
    private let identity: Locked<FileIdentity>
    private let writer = NSLock()
    private let isClosed = Locked(false)

    /// Opens (or creates) the store at `path` with `bugs` planted, keeping `retention` change sets in its log.
    public init(path: String, bugs: Set<PlantedBug> = [], retention: Int = 10_000) throws {
        guard !path.isEmpty else { throw ReservoirError(.invalidConfiguration, "planted: needs a path, as planted:PATH") }
        location = path
        self.bugs = bugs
        self.retention = retention
        let claimed = Self.openPaths.withLock { $0.insert(path).inserted }
        if !claimed && !bugs.contains(.secondOpenerAccepted) {
            throw ReservoirError(.busy, "planted store \"\(path)\": already open in this process; a single-process backend has one opener at a time (close the other store first)")
        }
        do {
            if FileManager.default.fileExists(atPath: path) {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                state = Locked(try JSONDecoder().decode(PlantedFile.self, from: data).state(path: path, retention: retention))
            } else {
                state = Locked(PlantedState(log: RetainedChangeLog(retention: retention)))
                try Self.save(PlantedState(log: RetainedChangeLog(retention: retention)), to: path, bugs: bugs)
            }
            identity = Locked(try FileIdentity(path: path, store: "planted store \"\(path)\""))
        } catch {
            if claimed { Self.openPaths.withLock { _ = $0.remove(path) } }
            if let error = error as? ReservoirError { throw error }
            throw ReservoirError(.cannotOpen, "planted store \"\(path)\": \(error)")
        }
    }

    deinit { close() }

    public var capabilities: BackendCapabilities { [.persistent] }

    public func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        let transaction = PlantedTransaction(state: state.withLock { $0 }, bugs: bugs)
        defer { if !bugs.contains(.transactionUsableAfterClosure) { transaction.end() } }
        return try body(transaction)
    }

    public func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        writer.lock()
        defer { writer.unlock() }
        try checkOpen()
        try checkIdentity()
        let transaction = PlantedTransaction(state: state.withLock { $0 }, bugs: bugs)
        defer { if !bugs.contains(.transactionUsableAfterClosure) { transaction.end() } }
        let result: R
        do {
            result = try body(transaction)
        } catch {
            if bugs.contains(.rollbackLeaksWrites) { state.withLock { $0 = transaction.state } }
            throw error
        }
        try Self.save(transaction.state, to: location, bugs: bugs)
        if !bugs.contains(.identityNotRetakenAfterCommit) {
            let renamedIn = try FileIdentity(path: location, store: "planted store \"\(location)\"")
            identity.withLock { $0 = renamedIn }
        }
        state.withLock { $0 = transaction.state }
        return result
    }

    public func commitToken() throws -> UInt64 {
        try checkOpen()
        try checkIdentity()
        return state.withLock { $0.log.lastSequence }
    }

    public func close() {
        guard isClosed.setOnce() else { return }
        if !bugs.contains(.secondOpenerAccepted) && !bugs.contains(.closeKeepsLocation) {
            Self.openPaths.withLock { _ = $0.remove(location) }
        }
    }

    private func checkOpen() throws {
        if isClosed.withLock({ $0 }) && !bugs.contains(.callsAfterCloseAccepted) {
            throw ReservoirError(.closed, "planted store \"\(location)\" has been closed")
        }
    }

    private func checkIdentity() throws {
        guard !bugs.contains(.replacedFilesUnnoticed) else { return }
        try identity.withLock { $0 }.check(store: "planted store \"\(location)\"")
    }

    /// Writes the whole store to a temporary file beside `path` and renames it into place.
    static func save(_ state: PlantedState, to path: String, bugs: Set<PlantedBug>) throws {
        do {
            let data = try JSONEncoder().encode(PlantedFile(state, bugs: bugs))
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw ReservoirError(.backend, "planted store \"\(path)\": cannot save: \(error)")
        }
    }
}

/// What the store holds; the change log is the core's `RetainedChangeLog`.
struct PlantedState: Sendable {
    struct Table: Sendable {
        var entity: EntityDescription
        var rows: [Value: Row] = [:]
    }
    var tables: [String: Table] = [:]
    var log: RetainedChangeLog
    /// The store's identity, made with the file.
    var identity = UUID()
}

/// A read or write transaction over a copy of the state; a write's copy becomes the state
/// when it commits. Every call after its closure returned throws `.misuse`.
final class PlantedTransaction: WriteTransaction {
    var state: PlantedState
    let bugs: Set<PlantedBug>
    private var isOpen = true

    init(state: PlantedState, bugs: Set<PlantedBug>) {
        self.state = state
        self.bugs = bugs
    }

    func end() { isOpen = false }

    private func checkOpen() throws {
        guard isOpen else {
            throw ReservoirError(.misuse, "planted store: a transaction was used after its read or write closure returned; use it only inside the closure")
        }
    }

    func row(_ entity: String, id: Value) throws -> Row? {
        try checkOpen()
        return state.tables[entity]?.rows[id]
    }

    func fetch(_ query: Query) throws -> [Row] {
        try checkOpen()
        guard let table = state.tables[query.entity.name] else { return [] }
        var query = query
        if bugs.contains(.limitAndOffsetIgnored) {
            query.limit = nil
            query.offset = 0
        }
        return QueryEvaluator.evaluate(query, over: table.rows.values)
    }

    func fetch(_ query: Query, each body: (Row) throws -> Void) throws {
        for row in try fetch(query) { try body(row) }
    }

    func fetch(_ query: Query, expecting: (Int) -> Void, each body: (Row) throws -> Void) throws {
        let rows = try fetch(query)
        expecting(rows.count + (bugs.contains(.wrongRowCountAnnounced) ? 1 : 0))
        for row in rows { try body(row) }
    }

    func count(_ query: Query) throws -> Int {
        try fetch(query).count
    }

    func entities() throws -> [EntityDescription] {
        try checkOpen()
        return state.tables.values.filter { !$0.rows.isEmpty }.map(\.entity).sorted { $0.name < $1.name }
    }

    func lastSequence() throws -> UInt64 {
        try checkOpen()
        return state.log.lastSequence
    }

    func storeIdentity() throws -> UUID? {
        try checkOpen()
        return state.identity
    }

    func lastCommit() throws -> CommitPosition {
        try checkOpen()
        return state.log.lastCommit
    }

    func commit(at sequence: UInt64) throws -> CommitPosition? {
        try checkOpen()
        return state.log.commit(at: sequence)
    }

    func changeLog(after sequence: UInt64, limit: Int) throws -> [ChangeLogEntry] {
        try checkOpen()
        return state.log.entries(after: sequence, limit: limit)
    }

    func put(_ entity: EntityDescription, id: Value, row: Row) throws {
        try checkOpen()
        var table = state.tables[entity.name] ?? PlantedState.Table(entity: entity)
        if !bugs.contains(.staleEntityDescription) { table.entity = entity }
        table.rows[id] = row
        state.tables[entity.name] = table
    }

    func insert(_ entity: EntityDescription, id: Value, row: Row) throws -> Bool {
        try checkOpen()
        if state.tables[entity.name]?.rows[id] != nil && !bugs.contains(.insertOverwrites) { return false }
        try put(entity, id: id, row: row)
        return true
    }

    func delete(_ entity: EntityDescription, id: Value) throws {
        try checkOpen()
        state.tables[entity.name]?.rows[id] = nil
    }

    func record(_ changeSet: ChangeSet) throws {
        try checkOpen()
        state.log.record(changeSet)
    }
}
