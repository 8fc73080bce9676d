import Foundation
import OpenCombineShim
import Reservoir

/// Offline-first sync under random interleavings (Backends.md, "Sync"): one replica per backend,
/// all kept in step with one shared server (a memory store several `Store`s open, as several
/// processes would, through a wrapper that can lose a write before or after its commit), and
/// another client writing on the server directly. Steps, drawn from a seed: a replica writes one
/// column of a record or deletes it; the other client does; a replica pushes, pulls or runs a
/// round; a replica's push loses its server write before or after the commit; a replica is made
/// again (an app restarting).
///
/// Checked after every push that commits: each column a replica wrote since its last push is on
/// the server with the value it wrote (its change reached the server last), each record it
/// deleted is gone there, or the sync reported the change as rejected (a delete wins over a
/// concurrent update). And after every step, the server holds exactly what a model of the
/// documented rule holds (``ServerModel``: the other client's writes, and each committed push's
/// columns and deletes laid over the rows in server order), so a push that overwrote a column
/// it did not change, or brought back a deleted record, fails at that step. At the end, after rounds until nothing moves, every replica holds exactly
/// what the server holds. A failing run is shrunk to a few steps, reported as a test calling
/// ``replay(_:)``.
public struct SyncConvergenceTest {
    public let backends: [DifferentialBackend]

    public init(backends: [DifferentialBackend]) {
        self.backends = backends
    }

    static let entity = EntityDescription(name: "sync_notes", idColumn: "id", fields: ["id", "a", "b", "c"], indexes: [])
    static let columns = ["a", "b", "c"]

    /// Runs `steps` random steps from `seed`; throws a ``SyncConvergenceFailure`` naming the
    /// seed, the step and the steps before it, with the failing steps shrunk to a short sequence
    /// that still fails (as a test calling ``replay(_:)`` to paste).
    public func run(seed: UInt64, steps: Int) throws {
        var random = SeededGenerator(seed: seed)
        let plan = (0..<steps).map { Self.draw(&random, replicas: backends.count, written: $0 + 1) }
        guard var failure = execute(plan) else { return }
        failure.seed = seed
        failure.generatedCount = plan.count
        var runs = 0
        failure.shrunk = SequenceShrinker.removingChunks(Array(plan.prefix(failure.stepIndex + 1)), runs: &runs, maxRuns: 300) {
            execute($0)?.stepIndex
        }
        failure.shrinkRuns = runs
        throw failure
    }

    /// Runs `steps` (a shrunk failure's, say); throws the ``SyncConvergenceFailure`` they cause.
    public func replay(_ steps: [SyncConvergenceStep]) throws {
        if let failure = execute(steps) { throw failure }
    }

    /// One step drawn from `random`: the value it writes is the `written`th, new to the run,
    /// so a write always changes its column and the check after a push cannot mistake an older
    /// write's value for it.
    static func draw(_ random: inout SeededGenerator, replicas: Int, written: Int) -> SyncConvergenceStep {
        let replica = Int.random(in: 0..<replicas, using: &random)
        let id = Int64.random(in: 1...8, using: &random)
        let column = columns[Int.random(in: 0..<columns.count, using: &random)]
        let value: Value = Bool.random(using: &random) ? .integer(Int64(written)) : .text("t\(written)")
        let action: SyncConvergenceStep.Action = switch Int.random(in: 0..<100, using: &random) {
        case 0..<30: .set(column, value)
        case 30..<36: .delete
        case 36..<50: .serverSet(column, value)
        case 50..<53: .serverDelete
        case 53..<68: .push
        case 68..<80: .pull
        case 80..<92: .round
        case 92..<95: .pushLostBeforeCommit
        case 95..<98: .pushAnswerLost
        default: .restart
        }
        return SyncConvergenceStep(replica: replica, id: id, action: action)
    }

    /// Runs `plan` on fresh replicas and a fresh server, then settles; the failure, if any,
    /// with the index of the step it came at (the last, when settling failed).
    func execute(_ plan: [SyncConvergenceStep]) -> SyncConvergenceFailure? {
        let server = MemoryBackend()
        var replicas: [SyncConvergenceReplica] = []
        var log: [String] = []
        defer {
            for replica in replicas { replica.finish() }
            server.close()
        }
        func failure(_ index: Int, _ message: String) -> SyncConvergenceFailure {
            SyncConvergenceFailure(stepIndex: index, message: message, log: log)
        }
        let other: Store
        let model = ServerModel()
        do {
            other = try Store(backend: SharedServer(server), pollInterval: .seconds(3600), usesCommitSignal: false)
            for backend in backends { replicas.append(try SyncConvergenceReplica(backend, server: server, model: model)) }
        } catch {
            return failure(0, "opening a replica failed: \(error)")
        }
        defer { other.close() }
        for (index, step) in plan.enumerated() {
            guard replicas.indices.contains(step.replica) else { return failure(index, "step \(step) names replica \(step.replica) of \(replicas.count)") }
            let replica = replicas[step.replica]
            let id = Value.integer(step.id)
            log.append(step.line(replica.name))
            do {
                switch step.action {
                case let .set(column, value): try replica.set(id, column, value)
                case .delete: try replica.delete(id)
                case let .serverSet(column, value):
                    try Self.set(id, column, value, on: other)
                    model.write([id: [column: value]])
                case .serverDelete:
                    _ = try other.write { try $0.deleteRow(id: id, in: Self.entity) }
                    model.delete(id)
                case .push: try replica.push(checkingOn: other)
                case .pull: try replica.pull(checkingOn: other)
                case .round: try replica.round(checkingOn: other)
                case .pushLostBeforeCommit: try replica.failingPush(.beforeCommit, checkingOn: other)
                case .pushAnswerLost: try replica.failingPush(.afterCommit, checkingOn: other)
                case .restart: try replica.restart()
                }
                let held = try Self.rows(other)
                if held != model.lines {
                    throw SyncConvergenceMismatch(text: "the server holds \(held), the model of the conflict rule \(model.lines)")
                }
            } catch let message as SyncConvergenceMismatch {
                return failure(index, message.text)
            } catch {
                return failure(index, "the step threw: \(error)")
            }
        }
        // Quiet: rounds until every replica has nothing to send, then all hold the server's rows.
        let last = max(0, plan.count - 1)
        do {
            for _ in 0..<2 {
                for replica in replicas {
                    log.append("\(replica.name): round (settling)")
                    try replica.round(checkingOn: other)
                }
            }
            let expected = try Self.rows(other)
            for replica in replicas {
                let held = try Self.rows(replica.store)
                if held != expected {
                    throw SyncConvergenceMismatch(text: "after settling, \(replica.name) holds \(held), the server \(expected)")
                }
                if replica.sync.status.pendingChanges != 0 {
                    throw SyncConvergenceMismatch(text: "after settling, \(replica.name) counts \(replica.sync.status.pendingChanges) changes waiting")
                }
            }
        } catch let message as SyncConvergenceMismatch {
            return failure(last, message.text)
        } catch {
            return failure(last, "settling threw: \(error)")
        }
        return nil
    }

    /// The record `id`, raw, in `snapshot`.
    static func row(_ id: Value, _ snapshot: Snapshot) throws -> Row? {
        guard try snapshot.entities().contains(where: { $0.name == entity.name }) else { return nil }
        return try snapshot.rows(try Query(entity: entity, predicate: .compare(column: "id", .equal, id))).first
    }

    static func set(_ id: Value, _ column: String, _ value: Value, on store: Store) throws {
        try store.write { tx in
            var row = try row(id, tx) ?? Row(columns: ["id", "a", "b", "c"], values: [id, Value.null, Value.null, Value.null])
            row[column] = value
            try tx.putRow(row, in: entity)
        }
    }

    /// Every row of the entity, one line each, by id.
    static func rows(_ store: Store) throws -> [String] {
        try store.read { snapshot in
            guard try snapshot.entities().contains(where: { $0.name == entity.name }) else { return [] }
            return try snapshot.rows(try Query(entity: entity)).sorted { ($0["id"] ?? .null) < ($1["id"] ?? .null) }
                .map { row in columns.reduce("\(row["id"] ?? .null)") { $0 + " \($1)=\(row[$1] ?? .null)" } }
        }
    }
}

/// What the server should hold by the documented rule (Backends.md, "Sync"): the other
/// client's writes as made; a push that committed lays each column it sent over the server's
/// row (field-wise, last writer in server order wins), makes a record the server lacks from the
/// columns sent (a record made on the replica sends every column), and deletes what it deleted
/// (a delete wins); a change the sync reported rejected leaves the server as it was.
final class ServerModel {
    private var rows: [Value: [String: Value]] = [:]

    func write(_ written: [Value: [String: Value]]) {
        for (id, columns) in written {
            rows[id, default: Dictionary(uniqueKeysWithValues: SyncConvergenceTest.columns.map { ($0, Value.null) })]
                .merge(columns) { _, new in new }
        }
    }

    func delete(_ id: Value) {
        rows[id] = nil
    }

    func holds(_ id: Value) -> Bool { rows[id] != nil }

    /// The rows as ``SyncConvergenceTest/rows(_:)`` writes a store's.
    var lines: [String] {
        rows.sorted { $0.key < $1.key }.map { id, row in
            SyncConvergenceTest.columns.reduce("\(id)") { $0 + " \($1)=\(row[$1] ?? .null)" }
        }
    }
}

/// Why a run failed: the seed, the step, and the steps up to it.
public struct SyncConvergenceFailure: Error, CustomStringConvertible {
    /// The index of the failing step in the steps run (the last, when settling failed).
    public let stepIndex: Int
    public let message: String
    /// The steps run, as lines, and the settling rounds after them.
    public let log: [String]
    public internal(set) var seed: UInt64?
    public internal(set) var generatedCount = 0
    public internal(set) var shrunk: [SyncConvergenceStep] = []
    public internal(set) var shrinkRuns = 0

    init(stepIndex: Int, message: String, log: [String]) {
        self.stepIndex = stepIndex
        self.message = message
        self.log = log
    }

    public var description: String {
        var text = "sync convergence"
        if let seed { text += ", seed 0x\(String(seed, radix: 16)) (RESERVOIR_FUZZ_SEED)" }
        text += ", step \(stepIndex + 1)"
        if generatedCount > 0 { text += " of \(generatedCount)" }
        text += ": \(message)\nsteps:\n" + log.suffix(60).joined(separator: "\n")
        if !shrunk.isEmpty {
            text += "\nShrunk to \(shrunk.count) step\(shrunk.count == 1 ? "" : "s") in \(shrinkRuns) runs; as a test (with `backends` the ones this run used):\n\n"
            text += "@Test func syncConvergenceRegression() throws {\n    try SyncConvergenceTest(backends: backends).replay([\n"
            text += shrunk.map { "        \($0)," }.joined(separator: "\n")
            text += "\n    ])\n}\n"
        }
        return text
    }
}

/// One step of a ``SyncConvergenceTest`` run, replayable (``SyncConvergenceTest/replay(_:)``).
public struct SyncConvergenceStep: Sendable, CustomStringConvertible {
    public enum Action: Sendable {
        /// The replica writes one column of the record.
        case set(String, Value)
        /// The replica deletes the record.
        case delete
        /// The other client writes one column of the record on the server.
        case serverSet(String, Value)
        /// The other client deletes the record on the server.
        case serverDelete
        case push, pull, round
        /// The replica pushes, and its server write is lost before its `COMMIT`.
        case pushLostBeforeCommit
        /// The replica pushes, and the answer to its server write's `COMMIT` is lost.
        case pushAnswerLost
        /// The replica's `Sync` is made again (an app restarting).
        case restart
    }

    /// The replica (its index in the test's backends) taking the step.
    public var replica: Int
    /// The record a write or delete touches.
    public var id: Int64
    public var action: Action

    public init(replica: Int, id: Int64, action: Action) {
        self.replica = replica
        self.id = id
        self.action = action
    }

    /// The step as Swift source, for a shrunk failure's test.
    public var description: String {
        let action: String = switch self.action {
        case let .set(column, value): ".set(\"\(column)\", \(Self.source(value)))"
        case .delete: ".delete"
        case let .serverSet(column, value): ".serverSet(\"\(column)\", \(Self.source(value)))"
        case .serverDelete: ".serverDelete"
        case .push: ".push"
        case .pull: ".pull"
        case .round: ".round"
        case .pushLostBeforeCommit: ".pushLostBeforeCommit"
        case .pushAnswerLost: ".pushAnswerLost"
        case .restart: ".restart"
        }
        return "SyncConvergenceStep(replica: \(replica), id: \(id), action: \(action))"
    }

    private static func source(_ value: Value) -> String {
        switch value {
        case let .integer(number): ".integer(\(number))"
        case let .text(text): ".text(\"\(text)\")"
        default: "\(value)"
        }
    }

    /// The step as a log line, with the replica's name.
    func line(_ name: String) -> String {
        switch action {
        case let .set(column, value): "\(name): set \(id).\(column) = \(value)"
        case .delete: "\(name): delete \(id)"
        case let .serverSet(column, value): "server: set \(id).\(column) = \(value)"
        case .serverDelete: "server: delete \(id)"
        case .push: "\(name): push"
        case .pull: "\(name): pull"
        case .round: "\(name): round"
        case .pushLostBeforeCommit: "\(name): push, its write lost before COMMIT"
        case .pushAnswerLost: "\(name): push, its COMMIT's answer lost"
        case .restart: "\(name): restart"
        }
    }
}

struct SyncConvergenceMismatch: Error {
    let text: String
}

/// One replica: its local store, its view of the server, its `Sync`, and what it wrote since
/// its last push, to check once a push commits.
final class SyncConvergenceReplica {
    let backend: DifferentialBackend
    let configuration: String
    let store: Store
    let server: SharedServer
    let remote: Store
    private(set) var sync: Sync
    private var events: AnyCancellable?
    private let rejected = Locked<Set<Value>>([])
    /// The last events, for failure messages.
    private let recent = Locked<[String]>([])
    /// What this replica changed since its last push that committed, not yet taken by a push.
    private var changes = Changes()
    /// The batch waiting in the replica's outbox after a push whose server write failed, and
    /// whether the server applied it (the answer to its COMMIT was lost): the next push or pull
    /// sends it first, before taking anything newer.
    private var outbox: (changes: Changes, applied: Bool, made: Set<Value>)?
    /// Records made here (absent locally when written) since the last push that took changes.
    private var made: Set<Value> = []
    /// What the server should hold, which this replica's committed pushes change.
    private let model: ServerModel
    /// The records this replica holds a base for (the server's row as it last saw it): a record
    /// written here while absent locally is made here (an insert) only without one; with one
    /// (deleted here, or by the server since) it is an update of the server's record.
    private var based: Set<Value> = []

    /// Columns written, by record, with their values, and records deleted.
    struct Changes {
        var written: [Value: [String: Value]] = [:]
        var deleted: Set<Value> = []

        /// These changes followed by `later`.
        func then(_ later: Changes) -> Changes {
            var result = self
            for id in later.deleted {
                result.written[id] = nil
                result.deleted.insert(id)
            }
            for (id, columns) in later.written {
                result.deleted.remove(id)
                result.written[id, default: [:]].merge(columns) { _, new in new }
            }
            return result
        }
    }

    init(_ backend: DifferentialBackend, server memory: MemoryBackend, model: ServerModel) throws {
        self.backend = backend
        self.model = model
        configuration = try backend.harness.freshConfiguration()
        do {
            store = try Store.open(configuration, registry: backend.harness.registry)
        } catch {
            backend.harness.cleanup(configuration)
            throw error
        }
        server = SharedServer(memory)
        remote = try Store(backend: server, pollInterval: .seconds(3600), usesCommitSignal: false)
        sync = try Sync(local: store, remote: remote)
        listen()
    }

    var name: String { backend.name }

    func finish() {
        events?.cancel()
        remote.close()
        store.close()
        backend.harness.cleanup(configuration)
    }

    private func listen() {
        events = sync.events.sink { [rejected, recent] event in
            switch event {
            case let .pushed(_, refused, _): rejected.withLock { $0.formUnion(refused.map(\.id)) }
            case let .rejected(refused): rejected.withLock { $0.formUnion(refused.map(\.id)) }
            default: break
            }
            recent.withLock { $0 = Array(($0 + ["\(event)"]).suffix(4)) }
        }
    }

    func set(_ id: Value, _ column: String, _ value: Value) throws {
        if try store.read({ try SyncConvergenceTest.row(id, $0) }) == nil {
            // A record made here gets new values in every column.
            if !based.contains(id) { made.insert(id) }
            for other in SyncConvergenceTest.columns where other != column {
                let fresh: Value = switch value {
                case let .integer(number): .text("\(number) \(other)")
                case let .text(text): .text("\(text) \(other)")
                default: .text("\(other)")
                }
                try SyncConvergenceTest.set(id, other, fresh, on: store)
                changes.written[id, default: [:]][other] = fresh
            }
        }
        try SyncConvergenceTest.set(id, column, value, on: store)
        changes.written[id, default: [:]][column] = value
        changes.deleted.remove(id)
    }

    func delete(_ id: Value) throws {
        let existed = try store.write { try $0.deleteRow(id: id, in: SyncConvergenceTest.entity) }
        if existed {
            changes.written[id] = nil
            // A record made here since the last push never reached the server: its delete
            // sends nothing (the server may hold another replica's record of that id).
            if made.remove(id) == nil { changes.deleted.insert(id) }
        }
    }

    func push(checkingOn other: Store) throws {
        try sync.push()
        try noteAppliedBatch(other)
        try absorbRejections(other)
        let pushed = sent().then(changes)
        try check(pushed, other)
        noteBases(pushed)
        changes = Changes()
        made = []
    }

    func round(checkingOn other: Store) throws {
        try push(checkingOn: other)
        try sync.pull()
        try absorbRejections(other)
        try noteBasesAfterPull(other)
    }

    /// After a push that committed: the server's rows of what it sent are the bases now.
    private func noteBases(_ pushed: Changes) {
        based.formUnion(pushed.written.keys)
        based.subtract(pushed.deleted)
    }

    /// After a pull, every record the server holds has its base here.
    private func noteBasesAfterPull(_ other: Store) throws {
        based = try other.read { snapshot in
            guard try snapshot.entities().contains(where: { $0.name == SyncConvergenceTest.entity.name }) else { return [] }
            return Set(try snapshot.rows(try Query(entity: SyncConvergenceTest.entity)).compactMap { $0["id"] })
        }
    }

    /// A pull sends the batch waiting in the outbox first.
    func pull(checkingOn other: Store) throws {
        try sync.pull()
        try noteAppliedBatch(other)
        try absorbRejections(other)
        try check(sent(), other)
        try noteBasesAfterPull(other)
        // A pull measures local changes against the server's rows it brings: a local delete of
        // a record the server deleted too is done (a record of that id made on the server
        // later is another record), and so is a column the server holds the written value of.
        for id in changes.deleted where try other.read({ try SyncConvergenceTest.row(id, $0) }) == nil {
            changes.deleted.remove(id)
        }
        // A record made here that the server holds too is one record now, with the server's row
        // as its base: deleting it here deletes it there.
        made.subtract(based)
        for (id, columns) in changes.written {
            guard let row = try other.read({ try SyncConvergenceTest.row(id, $0) }) else { continue }
            changes.written[id] = columns.filter { column, value in (row[column] ?? Value.null) != value }
        }
    }

    /// The record's base here is the server's row now: held when the server holds the record.
    private func noteBase(_ id: Value, on other: Store) throws {
        if try other.read({ try SyncConvergenceTest.row(id, $0) }) != nil { based.insert(id) } else { based.remove(id) }
    }

    /// A waiting batch the server had applied (its answer was lost), sent again: the sync settles
    /// its records to the server's rows, their bases too, so a record the server has deleted
    /// since has no base here any more (writing it again here makes it anew).
    private func noteAppliedBatch(_ other: Store) throws {
        guard let outbox, outbox.applied else { return }
        for id in Set(outbox.changes.written.keys).union(outbox.changes.deleted) {
            try noteBase(id, on: other)
        }
    }

    /// The waiting batch, now sent: what to check of it (nothing when the server had applied it
    /// before, as later writes may have overwritten it since; it was checked then).
    private func sent() -> Changes {
        defer { outbox = nil }
        guard let outbox, !outbox.applied else { return Changes() }
        return outbox.changes
    }

    func failingPush(_ fault: SharedServer.Fault, checkingOn other: Store) throws {
        // Nothing to send commits nothing, so the fault would wait for a later write: drop it.
        defer { server.faults.withLock { $0 = [] } }
        server.faults.withLock { $0 = [fault] }
        do {
            try sync.push()
            try noteAppliedBatch(other)
            try absorbRejections(other)
            if server.faults.withLock({ $0.isEmpty }) {
                throw SyncConvergenceMismatch(text: "\(name): a push whose server write failed did not throw")
            }
            let pushed = sent().then(changes)
            try check(pushed, other)   // it had nothing to send
            noteBases(pushed)
            changes = Changes()
            made = []
        } catch is ReservoirError {
            try absorbRejections(other)
            // The failed write was the waiting batch's, or else the batch of everything changed
            // since the last push, which now waits.
            var waiting = outbox ?? (changes, false, made)
            if outbox == nil {
                changes = Changes()
                made = []
            }
            if fault == .afterCommit && !waiting.applied {
                // On the server now: checked at once, as later writes may overwrite it before
                // the next push learns it was applied. Its rejections went with the lost
                // answer, so a record the server no longer has is not checked.
                try check(waiting.changes, other, answerLost: waiting.made)
                // What the server took has its base here (the retry learns so); a refused
                // record, gone there, has none.
                for id in waiting.changes.written.keys {
                    try noteBase(id, on: other)
                }
                based.subtract(waiting.changes.deleted)
                waiting.applied = true
            }
            outbox = waiting
        }
    }

    func restart() throws {
        events?.cancel()
        sync = try Sync(local: store, remote: remote)
        listen()
    }

    /// Forgets the changes the sync reported as rejected (or dropped): the server decided them,
    /// and the local record is the server's again (its base too, or none where it holds none).
    private func absorbRejections(_ other: Store) throws {
        let refused = rejected.withLock { ids -> Set<Value> in
            defer { ids = [] }
            return ids
        }
        for id in refused {
            try noteBase(id, on: other)
            changes.written[id] = nil
            changes.deleted.remove(id)
            outbox?.changes.written[id] = nil
            outbox?.changes.deleted.remove(id)
        }
    }

    /// After a push committed: what this replica wrote is on the server, and in the model.
    /// `answerLost`: the push's answer was lost, with its rejections; the records it made (which
    /// no rejection can refuse).
    private func check(_ pushed: Changes, _ other: Store, answerLost made: Set<Value>? = nil) throws {
        let answerLost = made != nil
        // The model first: the server is compared with it after the step.
        for id in pushed.deleted { model.delete(id) }
        // Without its rejections: a change to a record the server no longer holds was refused
        // (the delete there won), unless the replica made the record (an insert).
        model.write(pushed.written.filter { id, _ in made.map { $0.contains(id) || model.holds(id) } ?? true })
        for (id, columns) in pushed.written {
            guard let row = try other.read({ try SyncConvergenceTest.row(id, $0) }) else {
                if answerLost { continue }
                throw SyncConvergenceMismatch(text: "\(name) wrote \(columns) to \(id) and pushed, but the server has no such record and no rejection was reported")
            }
            for (column, value) in columns where !(row[column] ?? Value.null).isIdentical(to: value) {
                let local = try store.read { try SyncConvergenceTest.row(id, $0) }
                throw SyncConvergenceMismatch(text: "\(name) wrote \(id).\(column) = \(value) and pushed, but the server holds \(row[column] ?? Value.null) (its row \(row), the local row \(local.map { "\($0)" } ?? "none"); the last events: \(recent.withLock { $0 }))")
            }
        }
        for id in pushed.deleted {
            if try other.read({ try SyncConvergenceTest.row(id, $0) }) != nil {
                throw SyncConvergenceMismatch(text: "\(name) deleted \(id) and pushed, but the server still holds it")
            }
        }
    }
}

/// A memory backend several stores share, as processes share a server, whose next writes can
/// be lost before their commit (the connection dropped) or after it (the answer to `COMMIT`
/// lost): for sync tests.
public final class SharedServer: StorageBackend, @unchecked Sendable {
    // @unchecked: `faults` is a lock; `inner` is thread-safe.
    public enum Fault: Sendable { case beforeCommit, afterCommit }
    public let inner: MemoryBackend
    /// The faults the next writes meet, in order.
    public let faults = Locked<[Fault]>([])

    public init(_ inner: MemoryBackend) { self.inner = inner }

    public var capabilities: BackendCapabilities { [.multiProcess] }
    public var location: String { "shared server" }
    public var historyRetention: HistoryRetention? { inner.historyRetention }

    public func read<R>(_ body: (any ReadTransaction) throws -> R) throws -> R { try inner.read(body) }

    public func write<R>(_ body: (any WriteTransaction) throws -> R) throws -> R {
        let fault = faults.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        if fault == .beforeCommit { throw ReservoirError(.backend, "shared server: the connection was lost before COMMIT") }
        let result = try inner.write(body)
        if fault == .afterCommit { throw ReservoirError(.commitOutcomeUnknown, "shared server: the answer to COMMIT was lost") }
        return result
    }

    public func commitToken() throws -> UInt64 { try inner.commitToken() }
    public func close() {}
}
