import Foundation
import Reservoir

/// One backend's side of a differential run: its store, a second store on the same
/// location when the backend allows one, and its observers.
final class DifferentialReplica {
    let backend: DifferentialBackend
    let configuration: String
    private(set) var store: Store
    private var elsewhere: Store?
    private(set) var observers: DifferentialObservers
    /// A second store's subscriptions and the main store's live objects (see ``DifferentialWatchers``).
    private(set) var watchers: DifferentialWatchers?
    /// A history consumer that resumes from its token after every step (see ``DifferentialHistory``).
    private var history = DifferentialHistory()
    /// The schema versions applied so far, one per successful ``DifferentialStep/migrate(_:)``.
    private var versions: [SchemaVersion] = []

    init(_ backend: DifferentialBackend) throws {
        self.backend = backend
        configuration = try backend.harness.freshConfiguration()
        do {
            store = try Store.open(configuration, registry: backend.harness.registry)
        } catch {
            backend.harness.cleanup(configuration)
            throw error
        }
        observers = DifferentialObservers(store: store)
        do {
            watchers = try DifferentialWatchers(configuration: configuration, registry: backend.harness.registry, main: store)
        } catch {
            observers.cancelAll()
            store.close()
            backend.harness.cleanup(configuration)
            throw error
        }
    }

    func finish() {
        watchers?.finish()
        observers.cancelAll()
        elsewhere?.close()
        store.close()
        backend.harness.cleanup(configuration)
    }

    var name: String { backend.name }

    // MARK: - Steps

    /// Runs one step; returns the lines that say what the step's operations did.
    func run(_ step: DifferentialStep, foreign: (put: [DifferentialNote], delete: [Int])) throws -> [String] {
        switch step {
        case let .write(operations, failing):
            return Self.write(operations, failing: failing, on: store)
        case let .writeElsewhere(operations):
            observers.setExternalStep(true)
            defer { observers.setExternalStep(false) }
            guard store.capabilities.contains(.multiProcess) else { return Self.write(operations, failing: false, on: store) }
            let lines = Self.write(operations, failing: false, on: try secondStore())
            store.pollExternalChanges()
            return lines
        case .foreign:
            observers.setExternalStep(true)
            defer { observers.setExternalStep(false) }
            if let writer = backend.foreignWriter {
                try prepareForForeignWrites()
                let parsed = try StoreConfiguration(configuration)
                try writer(parsed, DifferentialNote.schema.name, foreign.put.map(DifferentialModel.row), foreign.delete.map { .integer(Int64($0)) })
                // A plain SQL client's commit is numbered when the backend is next probed.
                _ = try store.backend.commitToken()
                store.pollExternalChanges()
            } else {
                let target = store.capabilities.contains(.multiProcess) ? try secondStore() : store
                try target.write { tx in
                    for note in foreign.put { try tx.upsert(note) }
                    for id in foreign.delete { try tx.delete(DifferentialNote.self, id: id) }
                }
                if target !== store { store.pollExternalChanges() }
            }
            return []
        case .reopen:
            if store.capabilities.contains(.persistent) {
                // Closing ends every subscription once (Backends.md "Closing"), checked here on
                // each backend alone: memory: cannot close and keep its data.
                store.close()
                let problems = observers.endedByClose()
                observers.cancelAll()
                if !problems.isEmpty { throw StepProblem(text: problems.joined(separator: "; ")) }
                do {
                    store = try Store.open(configuration, registry: backend.harness.registry)
                } catch let error as ReservoirError where error.code == .busy {
                    // The only store on the location was closed first: a single-process backend
                    // may refuse a second opener, never the next one after close().
                    throw ReservoirError(.busy, "reopening after the only store on the location closed was refused; close() must release the location (Backends.md, \"A second opener of a location\"): \(error.message)")
                }
            } else {
                observers.cancelAll()
            }
            observers = DifferentialObservers(store: store)
            watchers?.mainStoreReopened(store)
            return []
        case let .request(n):
            observers.request(n)
            return []
        case .resubscribe:
            observers.resubscribe()
            return []
        case let .migrate(migration):
            let version = SchemaVersion(versions.count + 1, steps: migration.steps)
            do {
                try store.migrate(Migrations(versions + [version]))
                versions.append(version)
                return ["migrated"]
            } catch {
                return ["error \(Self.describe(error))"]
            }
        }
    }

    private var preparedForForeignWrites = false

    /// A foreign client writes to tables that exist: the first time, a write that inserts
    /// and deletes one record makes the entity's storage and nets to no change set.
    private func prepareForForeignWrites() throws {
        guard !preparedForForeignWrites else { return }
        try store.write { tx in
            let placeholder = DifferentialNote(id: -1, title: "")
            _ = try tx.upsert(placeholder)
            try tx.delete(placeholder)
        }
        preparedForForeignWrites = true
    }

    /// Moves the history consumer on after a step; returns what it found wrong.
    func advanceHistory(model: DifferentialModel) throws -> [String] {
        let second = store.capabilities.contains(.multiProcess) ? try secondStore() : nil
        return try history.advance(main: store, second: second, model: model)
    }

    private func secondStore() throws -> Store {
        if let elsewhere { return elsewhere }
        let opened = try Store.open(configuration, registry: backend.harness.registry)
        elsewhere = opened
        return opened
    }

    private struct Abort: Error {}

    /// What a step found wrong on this backend alone.
    struct StepProblem: Error, CustomStringConvertible {
        let text: String
        var description: String { text }
    }

    private static func write(_ operations: [DifferentialOperation], failing: Bool, on store: Store) -> [String] {
        var lines: [String] = []
        do {
            try store.write { tx in
                for operation in operations { lines.append(apply(operation, tx)) }
                if failing { throw Abort() }
            }
            if failing { lines.append("the failing write returned instead of rethrowing") }
        } catch is Abort {
        } catch {
            lines.append("the write threw \(describe(error))")
        }
        return lines
    }

    private static func apply(_ operation: DifferentialOperation, _ tx: Transaction) -> String {
        let requests = DifferentialNote.requests
        do {
            switch operation {
            case let .insert(note):
                try tx.insert(note)
                return "inserted"
            case let .update(note):
                try tx.update(note)
                return "updated"
            case let .upsert(note):
                switch try tx.upsert(note) {
                case .inserted: return "inserted"
                case .updated: return "updated"
                case .deleted: return "deleted?"
                case nil: return "unchanged"
                }
            case let .delete(id):
                return "deleted \(try tx.delete(DifferentialNote.self, id: id))"
            case let .deleteMatching(request):
                return "deleted \(try tx.delete(requests[request]))"
            case let .rewrite(id):
                guard let note = try tx.get(DifferentialNote.self, id: id) else { return "no record" }
                try tx.update(note)
                return "rewritten"
            case let .revert(id):
                guard let note = try tx.get(DifferentialNote.self, id: id) else { return "no record" }
                var changed = note
                changed.title += "~"
                try tx.update(changed)
                try tx.update(note)
                return "reverted"
            case let .get(id):
                return "get \(try tx.get(DifferentialNote.self, id: id)?.description ?? "nil")"
            case let .fetch(request):
                return "fetch " + DifferentialRender.list(try tx.fetch(requests[request]))
            case let .count(request):
                return "count \(try tx.count(requests[request]))"
            }
        } catch {
            return "error \(describe(error))"
        }
    }

    static func describe(_ error: any Error) -> String {
        (error as? ReservoirError)?.code.description ?? "\(type(of: error)): \(error)"
    }
}
